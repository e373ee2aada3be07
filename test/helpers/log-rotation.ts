import { appendFileSync, readFileSync, statSync } from 'node:fs';
import { expect } from 'vitest';

/**
 * Fills a datastore server's log past the 10 MiB cap, then asserts that `check` rotated it (the
 * full log in `<log>.1`, an empty one in its place) and that the server, stopped, wrote its
 * shutdown lines at the start of the emptied log through the descriptor it had.
 */
export async function expectLogRotatedByCheck(
  log: string,
  server: { check(): Promise<boolean>; stop(): Promise<void> },
  shutdownLine: RegExp,
) {
  appendFileSync(log, `${'x'.repeat(11 * 1024 * 1024)}\n`);
  expect(await server.check()).toBe(true);
  expect(statSync(`${log}.1`).size).toBeGreaterThan(11 * 1024 * 1024);
  expect(statSync(log).size).toBe(0);
  await server.stop();
  const after = readFileSync(log, 'utf8');
  expect(after).toMatch(shutdownLine);
  expect(after.charCodeAt(0)).not.toBe(0); // at the new start, not past a hole
}
