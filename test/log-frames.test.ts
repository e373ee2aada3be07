import type { Writable } from 'node:stream';
import * as ws from 'ws';
import { describe, expect, it } from 'vitest';
import { textFrame } from '../src/observability/logs/frames.js';

// ws's frame parser (what every ws client runs), untyped in @types/ws.
const { Receiver } = ws as unknown as {
  Receiver: new (options: { isServer: boolean; skipUTF8Validation: boolean }) => Writable;
};

describe('log stream frames', () => {
  // Each length crosses one of the frame header's length encodings (7-bit, 16-bit, 64-bit).
  it.each([0, 1, 125, 126, 65535, 65536, 200_000])('ws reads a %i-byte text frame back as sent', async (size) => {
    const payload = Buffer.alloc(size, 'é').subarray(0, size);
    const text = payload.toString('utf8');
    const receiver = new Receiver({ isServer: false, skipUTF8Validation: true });
    const messages: Array<{ data: string; binary: boolean }> = [];
    receiver.on('message', (data: Buffer, binary: boolean) => messages.push({ data: data.toString('utf8'), binary }));
    // Two frames back to back, as a batch is written.
    await new Promise<void>((resolve, reject) =>
      receiver.write(Buffer.concat([textFrame(payload), textFrame(Buffer.from('next'))]), (err?: Error | null) =>
        err ? reject(err) : resolve(),
      ),
    );
    expect(messages).toEqual([
      { data: text, binary: false },
      { data: 'next', binary: false },
    ]);
  });
});
