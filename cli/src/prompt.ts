import { createInterface } from 'node:readline/promises';
import { Writable } from 'node:stream';

/** Whether the CLI may ask questions: a person at a terminal on both ends. */
export const interactive = () => !!process.stdin.isTTY && !!process.stderr.isTTY;

/** Asks on stderr (stdout holds only results); an empty answer takes the default. */
export async function ask(question: string, fallback?: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr });
  try {
    const answer = (await rl.question(fallback ? `${question} (${fallback}): ` : `${question}: `)).trim();
    return answer || fallback || '';
  } finally {
    rl.close();
  }
}

/** A password typed without echo on a terminal; otherwise the first line of stdin (`--password-stdin`, a pipe). */
export async function readSecret(question: string): Promise<string> {
  if (!process.stdin.isTTY) return (await readStdin()).split('\n')[0]!.replace(/\r$/, '');
  let muted = false;
  const output = new Writable({
    write(chunk, _encoding, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  try {
    const answer = rl.question(`${question}: `);
    muted = true;
    return await answer;
  } finally {
    rl.close();
    process.stderr.write('\n');
  }
}

export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}
