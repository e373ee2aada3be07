import { gzipSync } from 'node:zlib';

/** One ustar header block for `name` (written by hand: tar libraries refuse to write hostile names). */
function header(name: string, size: number, type = '0', linkName = ''): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100);
  h.write('0000644\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(size.toString(8).padStart(11, '0') + '\0', 124);
  h.write('00000000000\0', 136);
  h.write('        ', 148); // checksum counted as spaces
  h.write(type, 156);
  h.write(linkName, 157, 100);
  h.write('ustar\0', 257);
  h.write('00', 263);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
  return h;
}

/** A .tar.gz holding one file entry named `name` (e.g. `../escape.txt`). */
export function tarWithEntry(name: string, content = 'pwned'): Buffer {
  const data = Buffer.from(content);
  const padded = Buffer.alloc(Math.ceil(data.length / 512) * 512);
  data.copy(padded);
  return gzipSync(Buffer.concat([header(name, data.length), padded, Buffer.alloc(1024)]));
}
