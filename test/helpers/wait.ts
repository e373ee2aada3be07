/** Waiting and free ports for tests and benches (no vitest here: benches import it). */
import net from 'node:net';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a truthy value; throws with `what` after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | null | false>,
  timeoutMs = 10_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() > deadline)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${lastError ? ` (last error: ${(lastError as Error).message})` : ''}`,
      );
    await sleep(everyMs);
  }
}

/**
 * A TCP port nobody uses now, for a program started later to listen on. It is drawn below the kernel's ephemeral
 * range (32768 and up): a port the kernel handed out for `listen(0)` could be handed out again, to another test's
 * server or to an outgoing connection, before the program binds it (EADDRINUSE under a busy suite).
 */
export async function freePort(): Promise<number> {
  for (;;) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    const server = net.createServer();
    const bound = await new Promise<boolean>((resolve) =>
      server.once('error', () => resolve(false)).listen(port, '127.0.0.1', () => resolve(true)),
    );
    if (!bound) continue;
    await new Promise((resolve) => server.close(resolve));
    return port;
  }
}
