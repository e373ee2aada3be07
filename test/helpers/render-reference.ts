import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Render's public OpenAPI document is shared material kept beside the repo, never copied in; `RENDER_OPENAPI`
// points at it when the checkout lives elsewhere (.ci/run sets it).
const repoRoot = fileURLToPath(new URL('../..', import.meta.url));
const candidates = [process.env.RENDER_OPENAPI, path.resolve(repoRoot, '../shared/reference/render-openapi.json')];

export const renderReferencePath = candidates.find((p): p is string => !!p && existsSync(p));

/** The parsed document, or undefined (with a warning saying where it was looked for). */
export function loadRenderReference(): any {
  if (renderReferencePath) return JSON.parse(readFileSync(renderReferencePath, 'utf8'));
  console.warn(
    `Render's OpenAPI reference not found (looked at ${candidates.filter(Boolean).join(', ')}): conformance tests skipped`,
  );
  return undefined;
}
