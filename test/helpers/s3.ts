import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { generate } from 'selfsigned';

/** A real S3-compatible server (s3rver) on 127.0.0.1 over TLS, for `localhost`, with one bucket. */
export interface TestS3 {
  port: number;
  /** Its certificate, which is its own CA (readable by anyone: pgBackRest reads it as the servers' run user). */
  caFile: string;
  /** Where it keeps each object, as a file named by its key. */
  objectsDir: string;
  close(): Promise<void>;
}

/**
 * Started in a child process: s3rver makes its list continuation tokens with DES, which Node 20's OpenSSL 3 offers only
 * with the legacy provider (a listing past 1,000 keys otherwise fails with a 500).
 */
export async function startS3(dir: string, bucket: string): Promise<TestS3> {
  const tls = await generate([{ name: 'commonName', value: 'localhost' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }] }],
  });
  const caFile = path.join(dir, 'ca.pem');
  writeFileSync(caFile, tls.cert, { mode: 0o644 });
  const objectsDir = path.join(dir, 'objects');
  const script = `
    const S3rver = require('s3rver');
    new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: process.env.DIR, key: process.env.KEY,
      cert: process.env.CERT, configureBuckets: [{ name: process.env.BUCKET, configs: [] }] })
      .run().then((a) => console.log('listening ' + a.port), (e) => { console.error(e); process.exit(1); });`;
  const child = spawn(process.execPath, ['--openssl-legacy-provider', '-e', script], {
    env: { ...process.env, DIR: objectsDir, KEY: tls.private, CERT: tls.cert, BUCKET: bucket },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      const found = /listening (\d+)/.exec(chunk.toString());
      if (found) resolve(Number(found[1]));
    });
    child.once('exit', (code) => reject(new Error(`s3rver exited (${code}) before it listened`)));
  });
  return {
    port,
    caFile,
    objectsDir,
    close: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
