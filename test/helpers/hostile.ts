import { gzipSync } from 'node:zlib';

// Hostile archives are crafted byte by byte at test time: tar libraries refuse to write
// them, and the tests must not depend on the library under test to make their inputs.

export interface RawTarEntry {
  name: string;
  type?: string;
  data?: Buffer;
  mode?: number;
  linkname?: string;
}

/** A ustar header written by hand, so tests do not depend on the library under test to craft hostile entries. */
function tarHeader(name: string, type: string, size: number, mode: number, linkname: string): Buffer {
  const block = Buffer.alloc(512);
  const put = (offset: number, length: number, value: string) => {
    if (Buffer.byteLength(value) > length) throw new Error(`tar field too long: ${value}`);
    block.write(value, offset, length, 'utf8');
  };
  const octal = (offset: number, length: number, value: number) =>
    put(offset, length, value.toString(8).padStart(length - 1, '0') + '\0');
  put(0, 100, name);
  octal(100, 8, mode);
  octal(108, 8, 0);
  octal(116, 8, 0);
  octal(124, 12, size);
  octal(136, 12, Math.floor(Date.now() / 1000));
  block.fill(' ', 148, 156); // checksum is computed with its own field as spaces
  put(156, 1, type);
  put(157, 100, linkname);
  put(257, 6, 'ustar\0');
  put(263, 2, '00');
  const checksum = block.reduce((sum, byte) => sum + byte, 0);
  put(148, 8, checksum.toString(8).padStart(6, '0') + '\0 ');
  return block;
}

export function rawTarGz(entries: RawTarEntry[]): Buffer {
  const parts: Buffer[] = [];
  for (const { name, type = '0', data = Buffer.alloc(0), mode = 0o644, linkname = '' } of entries) {
    parts.push(
      tarHeader(name, type, data.length, mode, linkname),
      data,
      Buffer.alloc((512 - (data.length % 512)) % 512),
    );
  }
  parts.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(parts));
}
