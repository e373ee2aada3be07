import { closeSync, fstatSync, openSync, readSync } from 'node:fs';

/** The last `bytes` of a file (a process's stdout or stderr), as text; empty when it cannot be read. */
export function fileTail(file: string, bytes = 16 * 1024): string {
  let fd: number | undefined;
  try {
    fd = openSync(file, 'r');
    const size = fstatSync(fd).size;
    const buffer = Buffer.alloc(Math.min(size, bytes));
    readSync(fd, buffer, 0, buffer.length, size - buffer.length);
    return buffer.toString('utf8');
  } catch {
    return '';
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
