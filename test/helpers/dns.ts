/**
 * A real DNS server for the domain tests: Debian's `pebble-challtestsrv`, which answers what its management API is
 * told (and nothing by default: no default A/AAAA answers).
 */
import { spawn } from 'node:child_process';
import { findProgram } from '../../src/runtime/local/capabilities.js';
import { freePort, waitFor } from './wait.js';

export interface TestDns {
  /** `127.0.0.1:<port>`, for SLIPWAY_DNS_SERVERS. */
  server: string;
  addA(host: string, addresses: string[]): Promise<void>;
  clearA(host: string): Promise<void>;
  setCname(host: string, target: string): Promise<void>;
  clearCname(host: string): Promise<void>;
  /** Adds a value to `host`'s TXT records (a name may hold several). */
  addTxt(host: string, value: string): Promise<void>;
  clearTxt(host: string): Promise<void>;
  close(): Promise<void>;
}

export const hasChallTestSrv = () => findProgram('pebble-challtestsrv') !== undefined;

export async function startTestDns(): Promise<TestDns> {
  const dnsPort = await freePort();
  const managementPort = await freePort();
  const child = spawn(
    findProgram('pebble-challtestsrv')!,
    [
      '-dns01',
      `127.0.0.1:${dnsPort}`,
      '-management',
      `127.0.0.1:${managementPort}`,
      '-http01',
      '',
      '-https01',
      '',
      '-tlsalpn01',
      '',
      '-defaultIPv4',
      '',
      '-defaultIPv6',
      '',
    ],
    { stdio: 'ignore' },
  );
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const api = async (path: string, body: object) => {
    const res = await fetch(`http://127.0.0.1:${managementPort}${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
  };
  await waitFor('pebble-challtestsrv to answer', async () =>
    fetch(`http://127.0.0.1:${managementPort}/clear-a`, { method: 'POST', body: '{"host":"ready.invalid"}' }).then(
      (r) => r.ok,
      () => false,
    ),
  );
  return {
    server: `127.0.0.1:${dnsPort}`,
    addA: (host, addresses) => api('/add-a', { host, addresses }),
    clearA: (host) => api('/clear-a', { host }),
    setCname: (host, target) => api('/set-cname', { host, target }),
    clearCname: (host) => api('/clear-cname', { host }),
    // The server keys TXT records by the fully qualified name (A and CNAME records it takes either way).
    addTxt: (host, value) => api('/set-txt', { host: `${host}.`, value }),
    clearTxt: (host) => api('/clear-txt', { host: `${host}.` }),
    async close() {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Creates the TXT record a custom domain's body asks for (`verificationRecord`): its workspace's proof of ownership. */
export async function proveOwnership(
  dns: TestDns,
  domain: { verificationRecord: { type: string; name: string; value: string } },
): Promise<void> {
  if (domain.verificationRecord.type !== 'TXT') throw new Error(`not a TXT record: ${domain.verificationRecord.type}`);
  await dns.addTxt(domain.verificationRecord.name, domain.verificationRecord.value);
}
