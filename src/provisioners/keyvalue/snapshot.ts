import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Redis } from 'ioredis';

/** Where the server writes its snapshot: its dir (its cwd), under Redis' default name. */
export const SNAPSHOT_FILE = 'dump.rdb';
/** A snapshot of a plan's largest memory, written by a forked server: minutes at most. */
const SAVE_TIMEOUT_MS = 10 * 60_000;

async function persistence(redis: Redis) {
  const text = String(await redis.call('INFO', 'persistence'));
  const field = (name: string) => new RegExp(`^${name}:(.*?)\\r?$`, 'm').exec(text)?.[1];
  return {
    saves: Number(field('rdb_saves')),
    running: field('rdb_bgsave_in_progress') === '1',
    ok: field('rdb_last_bgsave_status') === 'ok',
  };
}

/**
 * BGSAVE, and waits until it is written: the server forks and writes a point-in-time snapshot of its data
 * (SNAPSHOT_FILE in its dir) while it serves on. Done once the save count moved past the one read before asking.
 */
export async function backgroundSave(redis: Redis): Promise<void> {
  const before = (await persistence(redis)).saves;
  // SCHEDULE: after an AOF rewrite under way rather than refused; a save under way already counts as ours.
  await redis.call('BGSAVE', 'SCHEDULE').catch((err: Error) => {
    if (!/already in progress/i.test(err.message)) throw err;
  });
  for (const deadline = Date.now() + SAVE_TIMEOUT_MS; ; await sleep(100)) {
    const now = await persistence(redis);
    if (now.saves > before && !now.running) {
      if (!now.ok) throw new Error('the key-value server could not write its snapshot (see its log)');
      return;
    }
    if (Date.now() > deadline) throw new Error('the key-value server took too long to write its snapshot');
  }
}

/**
 * Copies the snapshot out of the server's dir, which its run user owns (as it does apps' files where no sandbox
 * hides them): opened without following a link, and only as a regular file, so a link planted there cannot make
 * Slipway, as root, copy a file of the machine into a tenant's export.
 */
export async function copySnapshot(from: string, to: string): Promise<void> {
  const source = await open(from, constants.O_RDONLY | constants.O_NOFOLLOW);
  const regular = await source.stat().then(
    (stat) => stat.isFile(),
    () => false,
  );
  if (!regular) {
    await source.close();
    throw new Error('the snapshot is not a regular file');
  }
  const target = await open(to, 'wx', 0o600).catch(async (err: Error) => {
    await source.close();
    throw err;
  });
  // Each stream closes its file once done (or failed).
  await pipeline(source.createReadStream(), target.createWriteStream());
}
