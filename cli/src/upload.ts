import { request } from './api.js';
import type { Context } from './contexts.js';
import type { Packed } from './pack.js';

export interface UploadAnswer {
  id: string;
  sha256: string;
  sizeBytes: number;
  deployId?: string;
}

/**
 * Streams a packed directory to POST /v1/services/:id/source/upload as it is packed (a chunked body). On a terminal a
 * progress bar on stderr counts through the files' bytes, with the rate and the time left. (A raw body: the typed
 * client serializes JSON.)
 */
export async function uploadSource(context: Context, serviceId: string, packed: Packed): Promise<UploadAnswer> {
  const bar = process.stderr.isTTY ? await progressBar(packed.bytes) : undefined;
  packed.onProgress = (done) => bar?.update(Math.min(done, packed.bytes));
  try {
    const route = `/v1/services/${encodeURIComponent(serviceId)}/source/upload`;
    const init = {
      method: 'POST',
      headers: { 'content-type': 'application/gzip' },
      body: packed.stream as unknown as BodyInit,
      duplex: 'half' as const,
    };
    return (await request(context, route, init, () => packed.error)).body as UploadAnswer;
  } finally {
    bar?.update(packed.bytes);
    bar?.stop();
  }
}

async function progressBar(total: number) {
  const { default: cliProgress } = await import('cli-progress');
  const bar = new cliProgress.SingleBar(
    {
      stream: process.stderr,
      format: 'Uploading [{bar}] {percentage}% | {value}/{total} | {speed}/s | {eta_formatted} left',
      formatValue: (value, options, type) =>
        type === 'value' || type === 'total' ? humanBytes(value) : cliProgress.Format.ValueFormat(value, options, type),
      hideCursor: true,
    },
    cliProgress.Presets.shades_classic,
  );
  const started = Date.now();
  bar.start(total, 0, { speed: humanBytes(0) });
  return {
    update(done: number) {
      bar.update(done, { speed: humanBytes(done / Math.max((Date.now() - started) / 1000, 0.001)) });
    },
    stop: () => bar.stop(),
  };
}

export function humanBytes(bytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(unit === 0 ? 0 : 1)} ${units[unit]}`;
}
