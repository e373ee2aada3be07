import { closeSync, fchownSync, openSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';

/** What a local server logged since byte `from`, at most its last 4 KiB (a failure's reason; the log may be large). */
export function logSince(logPath: string, from: number): string {
  let fd: number | undefined;
  try {
    const size = statSync(logPath).size;
    const start = Math.max(from, size - 4096);
    const buffer = Buffer.alloc(Math.max(0, size - start));
    fd = openSync(logPath, 'r');
    readSync(fd, buffer, 0, buffer.length, start);
    return buffer.toString('utf8').trim();
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Replaces a file in the run user's dir without following a link it may have put there: a new file (O_EXCL), renamed over. */
export function writeRunUserFile(file: string, text: string, runAs: { uid: number; gid: number } | undefined): void {
  const temp = `${file}.slipway-new`;
  rmSync(temp, { force: true });
  const fd = openSync(temp, 'wx', 0o600);
  try {
    writeSync(fd, text);
    if (runAs) fchownSync(fd, runAs.uid, runAs.gid);
  } finally {
    closeSync(fd);
  }
  renameSync(temp, file);
}
