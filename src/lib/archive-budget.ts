import { AppError } from './errors.js';

export interface ArchiveLimits {
  maxFiles: number;
  maxBytes: number;
} // max entries; max total unpacked bytes

/** Every refusal of an archive is the uploader's fault: a 400 naming the entry and the rule. */
export const rejectArchive = (message: string) => new AppError('bad_request', message);
export const showEntry = (name: string) => JSON.stringify(name.length > 200 ? `${name.slice(0, 200)}…` : name);

/**
 * Running totals of an archive against its limits, refusing at the first entry past one. Used
 * twice: by the header scan that runs before anything is written, and by the extraction itself
 * (zip sizes may lie, so bytes are counted again as they stream).
 */
export class ArchiveBudget {
  entries = 0;
  bytes = 0;

  constructor(readonly limits: ArchiveLimits) {}

  /** Counts one more entry (file, directory or link). */
  countEntry(raw: string) {
    if (++this.entries > this.limits.maxFiles)
      throw rejectArchive(`archive has more than ${this.limits.maxFiles} entries (limit reached at ${showEntry(raw)})`);
  }

  /** Adds unpacked bytes; refuses as soon as the total passes maxBytes, before the offending bytes reach disk. */
  addBytes(count: number, raw: string) {
    this.bytes += count;
    if (this.bytes > this.limits.maxBytes) throw this.tooBig(raw);
  }

  /** Refuses an entry whose claimed size alone would pass the limit, before any of it is read. */
  checkClaim(size: number, raw: string) {
    if (this.bytes + size > this.limits.maxBytes) throw this.tooBig(raw);
  }

  private tooBig = (raw: string) =>
    rejectArchive(`archive unpacks to more than ${this.limits.maxBytes} bytes (limit reached at ${showEntry(raw)})`);
}
