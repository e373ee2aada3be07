import path from 'node:path';
import type { Config } from './config.js';
import type { RouteTable } from '../router/route-table.js';
import { createCertificates, type Certificates } from '../core/domains/certificates.js';
import { createDomains } from '../core/domains/domains.js';
import type { Events } from '../core/events.js';
import { createAcmeAuthority } from '../integrations/acme.js';
import { createDnsLookup } from '../integrations/dns.js';
import type { Logger } from '../lib/logger.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { RouterOptions } from '../router/types.js';
import { appsDomainCertificate, createCertificateStore, type CertificateStore } from '../router/tls.js';
import type { Repos } from '../store/repos/index.js';

/**
 * The router's HTTPS options: the listener with the apps domain's certificate (custom domains' are added by
 * wireDomains), and the http-01 answers of orders in flight, read from the store so any router process can give them.
 */
export async function routerTls(
  config: Config,
  repos: Pick<Repos, 'certificates'>,
): Promise<Pick<RouterOptions, 'https' | 'acmeAnswer'>> {
  const { https } = config;
  if (https.port === undefined) return {};
  const fallback = await appsDomainCertificate({
    appsDomain: config.appsDomain,
    dir: path.join(config.dataDir, 'router-tls'),
    certFile: https.certFile,
    keyFile: https.keyFile,
  });
  return {
    https: { port: https.port, certificates: createCertificateStore(fallback), redirectPort: https.redirectPort },
    ...(https.acme ? { acmeAnswer: (token: string) => repos.certificates.challenge(token) } : {}),
  };
}

/**
 * Custom domains over the route table: verified domains are loaded into it at start, after every change, and on every
 * background pass (so a change another Slipway process made reaches this router within a pass). With ACME configured,
 * each pass also orders the certificates that are due and hands the issued ones to the HTTPS listener.
 */
export async function wireDomains(deps: {
  config: Config;
  repos: Pick<Repos, 'customDomains' | 'services' | 'certificates'>;
  routeTable: Pick<RouteTable, 'setDomains' | 'applied'>;
  events: Pick<Events, 'record' | 'poke'>;
  box: SecretBox;
  /** The HTTPS listener's certificates (none: no HTTPS listener). */
  tls: CertificateStore | undefined;
  log: Logger;
}) {
  const { repos, config, tls } = deps;
  const acme = config.https.acme;
  const certificates: Certificates | undefined =
    tls && acme
      ? createCertificates({
          repo: repos.certificates,
          box: deps.box,
          ca: createAcmeAuthority({
            directoryUrl: acme.directoryUrl,
            email: acme.email,
            caBundle: acme.caBundle,
            accountKey: async (make) => {
              const kept = await repos.certificates.accountKey(acme.directoryUrl);
              if (kept) return deps.box.open(kept);
              return deps.box.open(
                await repos.certificates.keepAccountKey(acme.directoryUrl, deps.box.seal(await make())),
              );
            },
          }),
          events: deps.events,
          renewBeforeMs: acme.renewBeforeMs,
          retryBaseMs: config.domainRetryMs,
          log: deps.log,
        })
      : undefined;

  let servedStamp = '';
  /**
   * Rebuilds the HTTPS listener's certificates when the issued set changed: every pass compares names and update times
   * only, so the keys are read and opened again only after an issue, a renewal or a deletion.
   */
  async function loadCertificates() {
    if (!tls || !certificates) return;
    const stamp = await certificates.servedStamp();
    if (stamp === servedStamp) return;
    const broken = tls.set(await certificates.served());
    if (broken.length) deps.log.error({ domains: broken }, 'certificates that do not load are not served');
    servedStamp = stamp;
  }
  const loadRoutes = async () => {
    deps.routeTable.setDomains(await repos.customDomains.verified());
    await loadCertificates(); // a deleted or unverified domain's certificate stops serving with its route
    await deps.routeTable.applied(); // nginx: a deletion has stopped serving when the request that made it returns
  };

  const domains = createDomains({
    repo: repos.customDomains,
    certificatesOf: (ids) => repos.certificates.ofDomains(ids),
    lookup: createDnsLookup(config.dnsServers),
    appsDomain: config.appsDomain,
    routerIps: config.routerPublicIps,
    tagOf: (workspaceId) => deps.box.tag('custom-domain-challenge', workspaceId),
    retryBaseMs: config.domainRetryMs,
    perService: config.domainsPerService,
    claimantOf: (id) => repos.services.get(id),
    events: deps.events,
    onRoutesChanged: async () => {
      await loadRoutes();
      kick(); // a domain just verified: order its certificate now, not on the next pass
    },
    log: deps.log,
  });
  await loadRoutes();

  let stopped = false;
  const log = (what: string) => (err: unknown) => deps.log.warn({ err }, what);
  // DNS checks and certificate orders run apart: a slow ACME server, or a tenant's orders that time out, must not hold
  // back every other domain's verification (and the reverse).
  const checks = serialized(async () => {
    if (stopped) return;
    await domains.checkDue();
    await loadRoutes();
  }, log('custom domain checks failed'));
  const orders = serialized(async () => {
    if (!stopped && certificates && (await certificates.orderDue())) {
      await loadCertificates();
      await deps.routeTable.applied();
    }
  }, log('certificate orders failed'));
  function kick() {
    checks.kick();
    orders.kick();
  }
  const timer = setInterval(kick, config.domainCheckMs);
  timer.unref();
  kick();
  return {
    domains,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await Promise.all([checks.idle(), orders.idle()]);
    },
  };
}

/** Runs `pass` one at a time; a kick while one runs queues one more after it, never a pile (a slow pass, a timer). */
function serialized(pass: () => Promise<void>, onError: (err: unknown) => void) {
  let running: Promise<void> = Promise.resolve();
  let queued = false;
  return {
    kick() {
      if (queued) return;
      queued = true;
      running = running.then(() => {
        queued = false;
        return pass().catch(onError);
      });
    },
    idle: () => running,
  };
}
