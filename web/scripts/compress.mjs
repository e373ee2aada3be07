// Precompresses the built files (gzip and brotli beside each), so Slipway serves them without compressing per request
// (@fastify/static's preCompressed option).
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const dist = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const COMPRESSIBLE = /\.(js|css|html|svg|json|txt)$/;

for (const entry of readdirSync(dist, { recursive: true, withFileTypes: true })) {
  const file = path.join(entry.parentPath, entry.name);
  if (!entry.isFile() || !COMPRESSIBLE.test(entry.name)) continue;
  const body = readFileSync(file);
  writeFileSync(`${file}.gz`, gzipSync(body, { level: 9 }));
  writeFileSync(`${file}.br`, brotliCompressSync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: 11 } }));
}
