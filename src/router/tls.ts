import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { generate } from 'selfsigned';

export interface KeyPair {
  cert: string;
  key: string;
}

/**
 * The certificates the HTTPS listener offers, picked by SNI: a custom domain's own, else the apps domain's (also what
 * a client without SNI gets). Replaced whole when certificates change; a handshake reads the map as it is.
 */
export function createCertificateStore(fallback: KeyPair) {
  let byName = new Map<string, tls.SecureContext>();
  let served: Array<{ name: string; certPem: string; keyPem: string }> = [];
  const listeners = new Set<() => void>();
  return {
    fallback,
    /** The pairs served now, for a data plane that reads certificates from files (nginx). */
    pairs: () => served,
    /** Called after every `set`. */
    onChange: (listener: () => void) => void listeners.add(listener),
    /** Replaces the served set; a pair that does not load is skipped (and named), the others still serve. */
    set(pairs: Array<{ name: string; certPem: string; keyPem: string }>): string[] {
      const next = new Map<string, tls.SecureContext>();
      const broken: string[] = [];
      const loaded = [];
      for (const p of pairs) {
        try {
          next.set(p.name.toLowerCase(), tls.createSecureContext({ cert: p.certPem, key: p.keyPem }));
          loaded.push({ ...p, name: p.name.toLowerCase() });
        } catch {
          broken.push(p.name);
        }
      }
      byName = next;
      served = loaded;
      for (const listener of listeners) listener();
      return broken;
    },
    has: (name: string) => byName.has(name),
    sniCallback(servername: string, done: (err: Error | null, ctx?: tls.SecureContext) => void) {
      done(null, byName.get(servername.toLowerCase()));
    },
  };
}
export type CertificateStore = ReturnType<typeof createCertificateStore>;

/**
 * The apps domain's certificate: the operator's files (a wildcard) when given, otherwise a self-signed one made once
 * under the data dir, readable by Slipway's user only.
 */
export async function appsDomainCertificate(opts: {
  appsDomain: string;
  dir: string;
  certFile?: string;
  keyFile?: string;
}): Promise<KeyPair> {
  if (opts.certFile && opts.keyFile)
    return { cert: readFileSync(opts.certFile, 'utf8'), key: readFileSync(opts.keyFile, 'utf8') };
  const certFile = path.join(opts.dir, 'apps-domain.crt');
  const keyFile = path.join(opts.dir, 'apps-domain.key');
  if (existsSync(certFile) && existsSync(keyFile))
    return { cert: readFileSync(certFile, 'utf8'), key: readFileSync(keyFile, 'utf8') };
  const wildcard = `*.${opts.appsDomain}`;
  const made = await generate([{ name: 'commonName', value: wildcard }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notAfterDate: new Date(Date.now() + 10 * 365 * 86_400_000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: wildcard },
          { type: 2, value: opts.appsDomain },
        ],
      },
    ],
  });
  mkdirSync(opts.dir, { recursive: true, mode: 0o700 });
  writeFileSync(keyFile, made.private, { mode: 0o600 });
  writeFileSync(certFile, made.cert, { mode: 0o600 });
  return { cert: made.cert, key: made.private };
}
