import { mkdirSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { fileURLToPath } from 'node:url';

// No vitest import here: bench/dashboard.ts launches the browser too.
const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

/**
 * The dashboard the server under test serves is web/dist, which `npm install` builds: a build older than web/src is
 * refused, so that a test never passes on a stale build. (Not rebuilt here: two files building it at once would race.)
 */
export function requireDashboardBuild(): void {
  const web = path.join(REPO_ROOT, 'web');
  const built = (() => {
    try {
      return statSync(path.join(web, 'dist', 'index.html')).mtimeMs;
    } catch {
      return 0;
    }
  })();
  const sources = [path.join(web, 'index.html'), path.join(web, 'vite.config.ts')].concat(
    readdirSync(path.join(web, 'src'), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => path.join(e.parentPath, e.name)),
  );
  const newest = Math.max(...sources.map((f) => statSync(f).mtimeMs));
  if (built < newest) throw new Error('web/dist is missing or older than web/src: run `npm run build -w web`');
}

/**
 * Debian's Chromium, headless (the browser is never downloaded). Background networking is off: this machine's network
 * is closed, and the browser would keep trying to reach Google.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** axe-core's serious and critical violations on the page as it is (injected over CDP: the page's CSP still holds). */
export async function axeViolations(page: Page): Promise<string[]> {
  await page.evaluate(axeSource);
  const found = await page.evaluate(async () => {
    const axe = (globalThis as unknown as { axe: { run: (ctx: Document) => Promise<any> } }).axe;
    const result = await axe.run(document);
    return result.violations as Array<{ id: string; impact: string; help: string; nodes: Array<{ target: string[] }> }>;
  });
  return found
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

export const SCREENSHOTS = path.join(REPO_ROOT, 'docs', 'screenshots');

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`) });
}
