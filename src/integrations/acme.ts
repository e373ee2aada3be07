import https from 'node:https';
import * as acme from 'acme-client';

/** Where http-01 answers go while an order is validated (every router process must be able to serve them). */
export interface ChallengeAnswers {
  put(token: string, keyAuthorization: string): Promise<void>;
  remove(token: string): Promise<void>;
}
export interface IssuedCertificate {
  /** The certificate and its chain. */
  certPem: string;
  keyPem: string;
}
/** The certificate authority port: Let's Encrypt, or any ACME server (pebble in tests). */
export interface CertificateAuthority {
  order(name: string, answers: ChallengeAnswers): Promise<IssuedCertificate>;
}

export interface AcmeOptions {
  directoryUrl: string;
  email?: string;
  /** PEM trusted for the ACME server's own TLS (a private CA, a test server). */
  caBundle?: string;
  /** The account key (PEM), made once per directory and kept by the caller. */
  accountKey(make: () => Promise<string>): Promise<string>;
}

/** An ACME client (acme-client) answering http-01 only: the router's HTTP listener serves the answers. */
export function createAcmeAuthority(options: AcmeOptions): CertificateAuthority {
  // acme-client talks through one axios instance of its own; a private CA is trusted for it alone.
  if (options.caBundle) acme.axios.defaults.httpsAgent = new https.Agent({ ca: options.caBundle, keepAlive: true });
  // An ACME server that accepts and never answers must not hold the orders forever (axios waits without end).
  acme.axios.defaults.timeout = 30_000;
  let client: Promise<acme.Client> | undefined;
  const clientOf = () =>
    (client ??= options
      .accountKey(async () => (await acme.crypto.createPrivateEcdsaKey()).toString())
      // Polls an order from 250 ms (doubling, up to 10 s, 12 tries) rather than acme-client's 5 s: validation
      // usually takes a second, and a certificate is what stands between a new domain and its first HTTPS visitor.
      .then(
        (accountKey) =>
          new acme.Client({
            directoryUrl: options.directoryUrl,
            accountKey,
            backoffMin: 250,
            backoffMax: 10_000,
            backoffAttempts: 12,
          }),
      )
      .catch((err: unknown) => {
        client = undefined; // tried again on the next order
        throw err;
      }));

  return {
    async order(name, answers) {
      const [key, csr] = await acme.crypto.createCsr(
        { commonName: name, altNames: [name] },
        await acme.crypto.createPrivateEcdsaKey(),
      );
      const certPem = await (
        await clientOf()
      ).auto({
        csr,
        ...(options.email ? { email: options.email } : {}),
        termsOfServiceAgreed: true,
        challengePriority: ['http-01'],
        // The ACME server checks the answer itself; a check from here would need this host's own view of the DNS.
        skipChallengeVerification: true,
        challengeCreateFn: (_authz, challenge, keyAuthorization) => answers.put(challenge.token, keyAuthorization),
        challengeRemoveFn: (_authz, challenge) => answers.remove(challenge.token),
      });
      return { certPem, keyPem: key.toString() };
    },
  };
}
