import { crc32, deflateRawSync, gzipSync } from 'node:zlib';

// Archives with very many entries, written by hand: fast to make (yazl takes half a minute for
// 100,000 entries), and each entry may claim any size.

export interface BombEntry {
  name: string;
  data?: Buffer;
  claimedSize?: number;
}

/**
 * A zip of stored (uncompressed) entries, zip64 when it has more than a classic one can count. An entry
 * with a `claimedSize` is deflated instead, and its headers claim that size (a stored one's would be refused as corrupt).
 */
export function manyEntryZip(entries: BombEntry[]): Buffer {
  const locals: Buffer[] = [];
  const central: Buffer[] = [];
  let offset = 0;
  for (const { name, data = Buffer.alloc(0), claimedSize } of entries) {
    const nameBytes = Buffer.from(name);
    const crc = crc32(data);
    const size = claimedSize ?? data.length;
    const method = claimedSize === undefined ? 0 : 8;
    const stored = method ? deflateRawSync(data) : data;
    const local = Buffer.alloc(30);
    local.writeUInt32LE(0x04034b50, 0);
    local.writeUInt16LE(20, 4); // version needed
    local.writeUInt16LE(method, 8);
    local.writeUInt32LE(crc, 14);
    local.writeUInt32LE(stored.length, 18); // compressed size
    local.writeUInt32LE(size, 22); // uncompressed size
    local.writeUInt16LE(nameBytes.length, 26);
    locals.push(local, nameBytes, stored);
    const record = Buffer.alloc(46);
    record.writeUInt32LE(0x02014b50, 0);
    record.writeUInt16LE((3 << 8) | 20, 4); // made by Unix
    record.writeUInt16LE(20, 6);
    record.writeUInt16LE(method, 10);
    record.writeUInt32LE(crc, 16);
    record.writeUInt32LE(stored.length, 20);
    record.writeUInt32LE(size, 24);
    record.writeUInt16LE(nameBytes.length, 28);
    record.writeUInt32LE((0o100644 << 16) >>> 0, 38); // a regular file
    record.writeUInt32LE(offset, 42);
    central.push(record, nameBytes);
    offset += 30 + nameBytes.length + stored.length;
  }
  const cd = Buffer.concat(central);
  const count = entries.length;
  const tail: Buffer[] = [];
  if (count > 0xfffe) {
    const zip64End = Buffer.alloc(56);
    zip64End.writeUInt32LE(0x06064b50, 0);
    zip64End.writeBigUInt64LE(44n, 4); // size of the rest of this record
    zip64End.writeUInt16LE(45, 12);
    zip64End.writeUInt16LE(45, 14);
    zip64End.writeBigUInt64LE(BigInt(count), 24);
    zip64End.writeBigUInt64LE(BigInt(count), 32);
    zip64End.writeBigUInt64LE(BigInt(cd.length), 40);
    zip64End.writeBigUInt64LE(BigInt(offset), 48);
    const locator = Buffer.alloc(20);
    locator.writeUInt32LE(0x07064b50, 0);
    locator.writeBigUInt64LE(BigInt(offset + cd.length), 8);
    locator.writeUInt32LE(1, 16);
    tail.push(zip64End, locator);
  }
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(Math.min(count, 0xffff), 8);
  end.writeUInt16LE(Math.min(count, 0xffff), 10);
  end.writeUInt32LE(cd.length, 12);
  end.writeUInt32LE(offset, 16);
  return Buffer.concat([...locals, cd, ...tail, end]);
}

/** A ustar tar.gz of empty files named `f<i>` (one 512-byte header each), then `last` if given: fast for 100,000 entries. */
export function manyEntryTarGz(count: number, last?: { name: string; size: number }): Buffer {
  const header = (name: string, size: number) => {
    const block = Buffer.alloc(512);
    block.write(name, 0, 100);
    block.write('0000644\0', 100);
    block.write('0000000\0', 108);
    block.write('0000000\0', 116);
    block.write(size.toString(8).padStart(11, '0') + '\0', 124);
    block.write('00000000000\0', 136);
    block.fill(' ', 148, 156);
    block.write('0', 156);
    block.write('ustar\0' + '00', 257);
    const sum = block.reduce((a, b) => a + b, 0);
    block.write(sum.toString(8).padStart(6, '0') + '\0 ', 148);
    return block;
  };
  const blocks: Buffer[] = [];
  for (let i = 0; i < count; i++) blocks.push(header(`f${i}`, 0));
  if (last) blocks.push(header(last.name, last.size), Buffer.alloc(Math.ceil(last.size / 512) * 512));
  blocks.push(Buffer.alloc(1024));
  return gzipSync(Buffer.concat(blocks), { level: 1 });
}
