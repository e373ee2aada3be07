import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

// Render's public OpenAPI document (OpenAPI 3.0.2, "Render Public API" 1.0.0), kept as a test fixture so the
// conformance tests need nothing outside the repo; `RENDER_OPENAPI` points at a newer copy to check against.
const fixture = fileURLToPath(new URL('../fixtures/render/openapi.json', import.meta.url));

/** The parsed document (a fresh copy each call: callers extend it). */
export function loadRenderReference(): any {
  return JSON.parse(readFileSync(process.env.RENDER_OPENAPI || fixture, 'utf8'));
}
