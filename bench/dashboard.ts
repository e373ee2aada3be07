/**
 * The dashboard (docs/dashboard.md), in Debian's Chromium against a real Slipway whose workspace has 200 services:
 * - the services page, cold (a new browser context: empty cache), from navigation start to the list's first row in the
 *   DOM, timed by the page itself (checked on every animation frame); beside the same browser loading the
 *   dashboard's favicon from the same server (no script, no API call) to its last byte, so the ratio is what the app
 *   adds. Target: the list within 1 s.
 * - the JavaScript the first page loads, gzipped (target ≤ 250 KB);
 * - Lighthouse's performance and accessibility scores of the services page, signed in, with its default (a phone on a
 *   slow network) and its desktop preset (targets ≥ 90).
 * BENCH_SMOKE=1: fewer rounds, no Lighthouse.
 */
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import * as chromeLauncher from 'chrome-launcher';
import lighthouse from 'lighthouse';
import { launchChromium } from '../test/helpers/browser.js';
import { log, median, pool, repoRoot, signUp, startSlipway, table } from './lib.js';

const SMOKE = process.env.BENCH_SMOKE === '1';
const ROUNDS = SMOKE ? 3 : 10;
const SERVICES = 200;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function firstPageScriptBytes(): number {
  const assets = path.join(repoRoot, 'web/dist/assets');
  // The entry chunk and its CSS; the service page's chunk loads only when a service is opened.
  return readdirSync(assets)
    .filter((f) => /^index-.*\.(js|css)\.gz$/.test(f))
    .reduce((sum, f) => sum + statSync(path.join(assets, f)).size, 0);
}

async function lighthouseScores(url: string, cookie: string, preset: 'mobile' | 'desktop') {
  const chrome = await chromeLauncher.launch({
    chromePath: CHROMIUM,
    chromeFlags: [
      '--headless=new',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--no-first-run',
    ],
  });
  try {
    // Lighthouse's default is a phone (4× CPU slowdown, a slow 4G network); its desktop preset throttles less.
    const config =
      preset === 'desktop' ? (await import('lighthouse/core/config/desktop-config.js')).default : undefined;
    const result = await lighthouse(
      `${url}/services`,
      {
        port: chrome.port,
        onlyCategories: ['performance', 'accessibility'],
        extraHeaders: { cookie },
        logLevel: 'error',
        output: 'json',
      },
      config,
    );
    const { categories, audits } = result!.lhr;
    const ms = (id: string) => Math.round(audits[id]?.numericValue ?? NaN);
    return {
      performance: Math.round((categories.performance?.score ?? 0) * 100),
      accessibility: Math.round((categories.accessibility?.score ?? 0) * 100),
      // In ms: first and largest contentful paint, total blocking time, speed index.
      metrics: {
        fcp: ms('first-contentful-paint'),
        lcp: ms('largest-contentful-paint'),
        tbt: ms('total-blocking-time'),
        speedIndex: ms('speed-index'),
      },
    };
  } finally {
    chrome.kill();
  }
}

async function main() {
  const slipway = await startSlipway();
  const browser = await launchChromium();
  try {
    const { headers, call } = await signUp(slipway.url);
    await pool(
      Array.from({ length: SERVICES }, (_, i) => i),
      8,
      (i) =>
        call('POST', '/v1/services', { type: 'web_service', name: `svc-${i}`, serviceDetails: { runtime: 'node' } }),
    );
    const session = headers.cookie.split('=')[1]!;
    const domain = new URL(slipway.url).hostname;
    const shown: number[] = [];
    const plain: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const context = await browser.newContext();
      await context.addCookies([{ name: 'slipway_session', value: session, domain, path: '/', httpOnly: true }]);
      const page = await context.newPage();
      await page.goto(`${slipway.url}/favicon.svg`);
      plain.push(
        await page.evaluate(
          () => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).responseEnd,
        ),
      );
      // bypassCSP lets the bench's probe run in the page; the app's own requests are the same.
      const cold = await browser.newContext({ bypassCSP: true });
      await cold.addCookies([{ name: 'slipway_session', value: session, domain, path: '/', httpOnly: true }]);
      const fresh = await cold.newPage();
      await fresh.goto(`${slipway.url}/services`, { waitUntil: 'commit' });
      // Checked on every animation frame, in the page: the time since navigation start when the first row is there.
      const at = await fresh.waitForFunction(
        () => (document.querySelector('table[aria-label="Services"] tbody tr') ? performance.now() : false),
        undefined,
        { polling: 'raf', timeout: 30_000 },
      );
      shown.push(Number(await at.jsonValue()));
      await cold.close();
      await context.close();
    }
    const js = firstPageScriptBytes();
    const scores = SMOKE
      ? undefined
      : {
          mobile: await lighthouseScores(slipway.url, headers.cookie, 'mobile'),
          desktop: await lighthouseScores(slipway.url, headers.cookie, 'desktop'),
        };
    const list = median(shown);
    const base = median(plain);
    log(
      table(
        ['measure', 'median', 'baseline (favicon)', 'ratio', 'target'],
        [
          [
            `services page, ${SERVICES} services, cold: list shown`,
            `${list.toFixed(0)} ms`,
            `${base.toFixed(0)} ms`,
            (list / base).toFixed(1),
            '≤ 1000 ms',
          ],
          ['first page JS + CSS, gzipped', `${(js / 1024).toFixed(1)} KB`, '', '', '≤ 250 KB'],
          ...(scores
            ? [
                ...(['mobile', 'desktop'] as const).flatMap((preset) => [
                  [
                    `Lighthouse performance, ${preset}`,
                    `${scores[preset].performance} ${JSON.stringify(scores[preset].metrics)}`,
                    '',
                    '',
                    '≥ 90',
                  ],
                  [`Lighthouse accessibility, ${preset}`, String(scores[preset].accessibility), '', '', '≥ 90'],
                ]),
              ]
            : []),
        ],
      ),
    );
    console.log(
      JSON.stringify({
        bench: 'dashboard',
        smoke: SMOKE,
        rounds: ROUNDS,
        listShownMs: Math.round(list),
        baselineMs: Math.round(base),
        firstPageGzipBytes: js,
        ...(scores ? { lighthouse: scores } : {}),
      }),
    );
  } finally {
    await browser.close();
    await slipway.stop();
  }
}

await main();
