import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import yazl from 'yazl';
import { REPO_ROOT } from './process.js';

const WHEELS = path.join(REPO_ROOT, 'test/fixtures/wheels');

/** Every file under `dir`, as paths relative to it. */
const filesUnder = (dir: string, base = ''): string[] =>
  readdirSync(path.join(dir, base), { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(dir, path.join(base, e.name)) : [path.join(base, e.name)],
  );

/** A RECORD line's hash: sha256, urlsafe base64 without padding (the wheel spec's). */
const recordHash = (data: Buffer) => `sha256=${createHash('sha256').update(data).digest('base64url')},${data.length}`;

/**
 * A pure-Python wheel of `test/fixtures/wheels/<name>` (its package dir), as the wheel spec lays one out (PEP 427: the
 * package, and a .dist-info with METADATA, WHEEL, entry_points.txt and RECORD), made here because this machine reaches
 * no Python package index. Returns its file name and bytes.
 */
export async function buildWheel(
  name: string,
  version: string,
  consoleScripts: Record<string, string> = {},
): Promise<{ file: string; data: Buffer }> {
  const root = path.join(WHEELS, name);
  const info = `${name}-${version}.dist-info`;
  const entries: Array<[string, Buffer]> = filesUnder(root).map((f) => [f, readFileSync(path.join(root, f))]);
  const scripts = Object.entries(consoleScripts);
  entries.push(
    [`${info}/METADATA`, Buffer.from(`Metadata-Version: 2.1\nName: ${name}\nVersion: ${version}\n`)],
    [
      `${info}/WHEEL`,
      Buffer.from('Wheel-Version: 1.0\nGenerator: slipway-tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n'),
    ],
  );
  if (scripts.length > 0)
    entries.push([
      `${info}/entry_points.txt`,
      Buffer.from(`[console_scripts]\n${scripts.map(([k, v]) => `${k} = ${v}`).join('\n')}\n`),
    ]);
  const record = [...entries.map(([f, data]) => `${f},${recordHash(data)}`), `${info}/RECORD,,`].join('\n') + '\n';
  entries.push([`${info}/RECORD`, Buffer.from(record)]);
  const zip = new yazl.ZipFile();
  for (const [f, data] of entries) zip.addBuffer(data, f, { mtime: new Date(0) });
  zip.end();
  const chunks: Buffer[] = [];
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk);
  return { file: `${name}-${version}-py3-none-any.whl`, data: Buffer.concat(chunks) };
}
