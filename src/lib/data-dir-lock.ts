import { mkdirSync, openSync, readFileSync, unlinkSync, writeSync, closeSync } from 'node:fs';
import path from 'node:path';

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Lock files this process holds: our own pid in a lock file is stale only if it is not one of these. */
const held = new Set<string>();

/**
 * One Slipway per data dir: PGlite would corrupt if two opened it. A lock file
 * holds the owner's pid; a lock left by a dead process (kill -9) is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, 'slipway.lock');
  const inUse = (pid: number) =>
    new Error(
      `data dir ${dataDir} is in use by another Slipway process (pid ${pid}); stop it or choose another SLIPWAY_DATA_DIR`,
    );
  if (held.has(file)) throw inUse(process.pid);
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(file, 'wx', 0o600);
      writeSync(fd, String(process.pid));
      closeSync(fd);
      held.add(file);
      return () => {
        held.delete(file);
        try {
          if (readFileSync(file, 'utf8') === String(process.pid)) unlinkSync(file);
        } catch {
          /* already gone */
        }
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const owner = Number(readFileSync(file, 'utf8'));
      if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner)) {
        throw inUse(owner);
      }
      unlinkSync(file); // stale: its owner died without cleaning up
    }
  }
  throw new Error(`could not lock data dir ${dataDir}`);
}
