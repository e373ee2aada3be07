/**
 * A real ACME server for the HTTPS tests: Debian's `pebble`, resolving names through the test's DNS server
 * (pebble-challtestsrv) and validating http-01 on the router's HTTP port, so a challenge really travels through it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { generate } from 'selfsigned';
import { findProgram } from '../../src/runtime/local/capabilities.js';
import { freePort, waitFor } from './wait.js';

export interface TestAcme {
  directoryUrl: string;
  /** The CA of pebble's own HTTPS listener, for SLIPWAY_ACME_CA_BUNDLE. */
  caBundleFile: string;
  /** The root pebble issues certificates under (management API `/roots/0`), to verify what the router serves. */
  issuingRoot(): Promise<string>;
  close(): Promise<void>;
}

export const hasPebble = () => findProgram('pebble') !== undefined && findProgram('pebble-challtestsrv') !== undefined;

/** pebble's own TLS: a CA made here and a certificate for 127.0.0.1 signed by it. */
export async function listenerCertificate(dir: string) {
  const ca = await generate([{ name: 'commonName', value: 'slipway test ACME listener CA' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, critical: true },
    ],
  });
  const leaf = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    ca: { key: ca.private, cert: ca.cert },
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 7, ip: '127.0.0.1' },
          { type: 2, value: 'localhost' },
        ],
      },
    ],
  });
  const files = { ca: path.join(dir, 'ca.pem'), cert: path.join(dir, 'cert.pem'), key: path.join(dir, 'key.pem') };
  writeFileSync(files.ca, ca.cert);
  writeFileSync(files.cert, leaf.cert);
  writeFileSync(files.key, leaf.private);
  return files;
}

export async function startPebble(opts: {
  dnsServer: string;
  /** The port http-01 is validated on: the router's HTTP port. */
  httpPort: number;
  /** Lifetime of the certificates it issues. */
  validitySeconds: number;
}): Promise<TestAcme> {
  const dir = mkdtempSync(path.join(tmpdir(), 'slipway-pebble-'));
  const tls = await listenerCertificate(dir);
  const [port, managementPort, tlsPort] = [await freePort(), await freePort(), await freePort()];
  const config = path.join(dir, 'pebble.json');
  writeFileSync(
    config,
    JSON.stringify({
      pebble: {
        listenAddress: `127.0.0.1:${port}`,
        managementListenAddress: `127.0.0.1:${managementPort}`,
        certificate: tls.cert,
        privateKey: tls.key,
        httpPort: opts.httpPort,
        tlsPort,
        ocspResponderURL: '',
        externalAccountBindingRequired: false,
        certificateValidityPeriod: opts.validitySeconds,
      },
    }),
  );
  const child = spawn(findProgram('pebble')!, ['-config', config, '-dnsserver', opts.dnsServer], {
    // No random sleep before validating, no nonces refused at random: the tests time what Slipway does.
    env: { ...process.env, PEBBLE_VA_NOSLEEP: '1', PEBBLE_WFE_NONCEREJECT: '0', PEBBLE_AUTHZREUSE: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-8000)));
  child.stderr!.on('data', (c: Buffer) => (output = (output + c.toString()).slice(-8000)));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const agent = new https.Agent({ ca: readFileSync(tls.ca) });
  const management = (p: string) =>
    new Promise<string>((resolve, reject) => {
      const req = https.get({ host: '127.0.0.1', port: managementPort, path: p, agent }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`${p}: ${res.statusCode}`))));
      });
      req.on('error', reject);
    });
  await waitFor('pebble to answer', () =>
    management('/roots/0').then(
      () => true,
      () => false,
    ),
  );
  return {
    directoryUrl: `https://127.0.0.1:${port}/dir`,
    caBundleFile: tls.ca,
    issuingRoot: () => management('/roots/0'),
    async close() {
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
