/**
 * The settings' shapes (docs/configuration.md): what app/config*.ts read from the environment, and the parts of it the
 * layers below the composition root are given. Types and constant tables only; reading and checking them is app/'s.
 */
import type { BuildPlan } from './enums.js';
import type { NotificationSettings } from './notifications.js';

/** Every setting Slipway reads, typed, with its embedded default (docs/architecture.md, "Configuration"; docs/configuration.md lists them). */
/** A swarm manager's Engine API (app/config-swarm.ts). */
export interface SwarmSettings {
  dockerHost: string;
  tls: { ca: string; cert: string; key: string } | undefined;
  /** Workspaces' overlay networks encrypted (IPsec): SLIPWAY_SWARM_ENCRYPTED, on unless 0/false/off. */
  encrypted: boolean;
}

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  databaseUrl: string | undefined;
  publicUrl: string;
  routerPort: number;
  appsDomain: string;
  operatorToken: string | undefined;
  /** This installation as Render's organization (its audit logs): every workspace, read with the operator token. */
  organizationId: string;
  secretKey: string | undefined;
  logLevel: string;
  /** Largest JSON body accepted, in bytes. */
  bodyLimitBytes: number;
  /** API and router connections: how long a client may take to send its headers (slowloris), and its whole request (a body that never ends). */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** API and router: an idle keep-alive connection is closed after this. */
  keepAliveTimeoutMs: number;
  /** Router: an app that sends nothing for this long gets a 504 (or its response cut off). */
  upstreamTimeoutMs: number;
  /** Requests per minute per credential (or per IP when anonymous). */
  rateLimitPerMinute: number;
  /** Login/register attempts per minute per IP. */
  authRateLimitPerMinute: number;
  /** Login/register attempts per 10 minutes per account (email), from any IP. */
  authAccountAttemptsPer10Minutes: number;
  sessionTtlDays: number;
  inviteTtlDays: number;
  /** How long a process keeps resolved sessions, API keys and workspace roles (0: not at all); changes drop them at once. */
  principalCacheMs: number;
  /** How long a list page is kept at most; a write to a table it read drops it at once (src/core/read-cache.ts). */
  readCacheMs: number;
  /** How stale an API key's lastUsedAt may get: it is written at most once per this interval. */
  apiKeyTouchMs: number;
  /** Sign-in providers (docs/configuration.md, the SLIPWAY_OAUTH_* settings): only fully configured ones. */
  oauth: OAuthSettings;
  /** Interface the app router listens on. */
  routerHost: string;
  /** Largest source archive accepted by POST …/source/upload. */
  maxUploadBytes: number;
  /** Unpacked limits for a source archive (zip/tar bombs). */
  archiveMaxFiles: number;
  archiveMaxBytes: number;
  buildTimeoutSeconds: number;
  /** What a build gets by Render's buildPlan (SLIPWAY_BUILD_STARTER_MEMORY_MB, …_CPUS, and PERFORMANCE's), whatever the service's plan. */
  buildPlans: Record<BuildPlan, { memoryMb: number; cpuMillicores: number }>;
  /** Per service, the dependency cache's largest size in MiB (SLIPWAY_BUILD_CACHE_MB); 0 turns the cache off. */
  buildCacheMb: number;
  /** Build disks, artifact size, builds at once, git's timeout (config-builds.ts). */
  builds: BuildSettings;
  /**
   * The registry Corepack fetches yarn and pnpm from, and Slipway the Node.js releases deploys ask for (SLIPWAY_NPM_REGISTRY);
   * the projects' own installs follow their config.
   */
  npmRegistry: string;
  /** Where those Node.js releases are kept, shared by every service (SLIPWAY_NODE_CACHE_DIR; default <data dir>/toolchain/node). */
  nodeCacheDir: string | undefined;
  /** How many Node.js releases it keeps at most (SLIPWAY_NODE_RELEASES_MAX); a request for another then fails. */
  nodeReleasesMax: number;
  /** Given to builds as COREPACK_INTEGRITY_KEYS (SLIPWAY_COREPACK_INTEGRITY_KEYS): `0` where a registry mirror drops npm's signatures. */
  corepackIntegrityKeys: string | undefined;
  /** Processes+threads per instance and build, for every plan (SLIPWAY_PIDS_LIMIT); undefined: the plan's (starter 1,024). */
  pidsLimit: number | undefined;
  /** Size in MiB of each writable scratch filesystem ($HOME, /tmp) per instance, for every plan (SLIPWAY_DISK_LIMIT_MB); undefined: the plan's (starter 1,024). */
  diskLimitMb: number | undefined;
  healthCheckTimeoutSeconds: number;
  /** Artifacts (and uploaded sources) kept per service for rollback; older ones are deleted. */
  keepArtifacts: number;
  /** Per service, what its artifacts, uploads and build disk may take in MiB (SLIPWAY_SERVICE_DISK_MB); older artifacts go first. */
  serviceDiskMb: number;
  /** How often the supervisor looks for crashed instances. */
  crashCheckMs: number;
  /** First restart delay after a crash; it doubles per crash in the window (max 60 s). */
  crashBackoffMs: number;
  /** Webhook delivery (docs/webhooks.md "Webhooks"). */
  webhooks: WebhookSettings;
  /** Email notifications' SMTP server and From address (docs/notifications.md); Slack's go out as webhooks do. */
  notifications: NotificationSettings;
  /** Log streams' syslog connections (docs/observability.md "Log streams"). */
  logStreams: LogStreamSettings;
  /** Metrics streams' OTLP exports (docs/observability.md "Metrics streams"). */
  metricsStreams: {
    /** SLIPWAY_METRICS_STREAM_ALLOW_PRIVATE=1: URLs may reach loopback and private addresses too. */
    allowPrivate: boolean;
    /** SLIPWAY_METRICS_STREAM_INTERVAL (seconds, default 60): one export per stream this often. */
    intervalMs: number;
    /** An export the endpoint has not answered within this long fails. */
    timeoutMs: number;
  };
  /** A running blueprint sync whose process stopped beating this long is failed by the next sync or start. */
  blueprintSyncStaleMs: number;
  /** Reading one render.yaml (in a worker thread) may take this long and this much heap, else 413. */
  blueprintParseMs: number;
  blueprintParseMemoryMb: number;
  /** auto: a network namespace per instance, build and datastore where this machine can make them; namespaces: required; shared: the host's network (one team only). */
  network: 'auto' | 'namespaces' | 'shared';
  /** The /16 the workspaces' private networks are cut from (a /24 each). */
  networkCidr: string;
  /**
   * IPv4 CIDRs that apps, builds and git may reach although they are not the internet (SLIPWAY_EGRESS_ALLOW): a private
   * git server or package mirror. Never the workspaces' range.
   */
  egressAllow: string[];
  /** auto: docker and image services where Podman is installed; off: refused, as where it is not. */
  containers: 'auto' | 'off';
  /** Registries containers pull from over plain HTTP or unchecked TLS (SLIPWAY_CONTAINER_INSECURE_REGISTRIES: host:port list). */
  insecureRegistries: string[];
  /** Each service's container disk: its images, layer cache and containers' roots (SLIPWAY_CONTAINER_DISK_MB; unset: 10 GiB). */
  containerDiskMb: number | undefined;
  /** A Docker Swarm whose nodes and networks Slipway uses (SLIPWAY_SWARM_DOCKER_HOST; docs/swarm.md); unset: none. */
  swarm: SwarmSettings | undefined;
  /** auto: bubblewrap where it works; bwrap: refuse to start without it; off: never (apps reach their files through the data dir's permissions). */
  sandbox: 'auto' | 'bwrap' | 'off';
  /** Postgres datastores as role+database on this existing server (the `cluster` provisioner) instead of local servers. */
  postgresAdminUrl: string | undefined;
  /** Key-value datastores as ACL users on this existing Redis (the `shared` provisioner) instead of local servers. */
  redisAdminUrl: string | undefined;
  /** Run Postgres and key-value servers on this machine when no admin URL is set (off: such datastores answer 501). */
  localDatastores: boolean;
  /** Local Postgres datastores' backups (pgBackRest repositories): SLIPWAY_BACKUP_DIR, else `<data dir>/backups`. */
  backupDir: string;
  /** Those repositories in an S3-compatible bucket instead (SLIPWAY_BACKUP_S3_*); the backup dir keeps their configs and logs. */
  backupS3: BackupS3 | undefined;
  /** How often the backup scheduler looks for a datastore whose newest base backup is a day old (SLIPWAY_BACKUP_CHECK_MS). */
  backupCheckMs: number;
  /** A failed base backup is tried again after this long (SLIPWAY_BACKUP_RETRY_MS). */
  backupRetryMs: number;
  /** How often the disk loop looks for a disk whose newest daily snapshot is a day old (SLIPWAY_DISK_CHECK_MS). */
  diskCheckMs: number;
  /** The largest disk a service may have, in GB (SLIPWAY_DISK_MAX_GB): what one tenant may take of the host's disk. */
  diskMaxGb: number;
  /** Slipway's own state backups (app/state-backup.ts), when SLIPWAY_STATE_BACKUP_DIR is set: there, this often, this many kept. */
  stateBackups: { dir: string; everyMs: number; keep: number } | undefined;
  /** Services may deploy from local paths and file:// repos (SLIPWAY_GIT_ALLOW_LOCAL): only where every workspace may read this machine's repositories. */
  gitAllowLocal: boolean;
  /** Resolvers for custom domains' DNS checks (SLIPWAY_DNS_SERVERS, `host:port` list; empty: the system's). */
  dnsServers: string[];
  /** The router's public addresses: an apex custom domain's A/AAAA records must all be among them. */
  routerPublicIps: string[];
  /** How often due custom-domain checks run (SLIPWAY_DOMAIN_CHECK_MS). */
  domainCheckMs: number;
  /** Custom domains one service may hold, twins included (SLIPWAY_DOMAINS_PER_SERVICE). */
  domainsPerService: number;
  /** An unverified domain's first wait before its next check, doubling to an hour (SLIPWAY_DOMAIN_RETRY_MS). */
  domainRetryMs: number;
  /** How often git services' branches are checked for new commits to deploy (SLIPWAY_GIT_POLL_INTERVAL_MS; 0: never). */
  gitPollIntervalMs: number;
  /** How often datastores are checked (and restarted when down). */
  datastoreCheckMs: number;
  /** Log entries older than this are deleted (SLIPWAY_LOG_RETENTION_DAYS). */
  logRetentionDays: number;
  /** Per service, the oldest log entries beyond this many bytes of messages are deleted. */
  logMaxBytesPerService: number;
  /** Bytes queued for one /v1/logs/subscribe client before it is closed with 4008. */
  logStreamBufferBytes: number;
  /** A filtered GET /v1/logs reads for at most this long and this many message bytes, then answers what it found (hasMore). */
  logQueryMs: number;
  logQueryBytes: number;
  /** How often instances' output files are checked for new lines. */
  logPollMs: number;
  /** App log lines a second each service may store; past it (and the burst), lines are dropped and reported. */
  logRateLines: number;
  /** Lines a service may print at once above the rate (the token bucket's size). */
  logBurstLines: number;
  /** Request log lines a second each service may store (a bucket of their own); metrics and bandwidth count every request. */
  requestLogRateLines: number;
  requestLogBurstLines: number;
  /** How often every running instance's CPU and memory are sampled (SLIPWAY_METRICS_INTERVAL seconds, fractions allowed). */
  metricsIntervalMs: number;
  /** Autoscaling's round interval, and the waits after a change before the next up or down. */
  autoscale: { intervalMs: number; upCooldownMs: number; downCooldownMs: number; warmupMs: number };
  /** How often the usage meter appends to the ledger (SLIPWAY_USAGE_INTERVAL_SECONDS, fractions allowed). */
  usageIntervalMs: number;
  /** SLIPWAY_PRICE_CATALOG: a YAML or JSON price catalog replacing the built-in one (core/billing/catalog.ts). */
  priceCatalogPath?: string;
  /** Billing through Stripe (docs/billing.md, "Billing (Stripe)"): on when `secretKey` is set. Keys are never logged. */
  stripe: {
    /** SLIPWAY_STRIPE_SECRET_KEY. */
    secretKey?: string;
    /** SLIPWAY_STRIPE_API_URL: another endpoint for Stripe's API (tests, proxies); default Stripe's own. */
    apiUrl?: string;
    /** SLIPWAY_STRIPE_WEBHOOK_SECRET: verifies POST /v1/billing/webhook (`whsec_…`); without it the route answers 501. */
    webhookSecret?: string;
    /** SLIPWAY_STRIPE_METER_EVENT: the meter's event name usage is reported under, in minor units. */
    meterEvent: string;
    /** SLIPWAY_STRIPE_METERED_PRICE: a metered price added to every checkout, so reported usage is invoiced. */
    meteredPrice?: string;
    /** SLIPWAY_BILLING_BLOCK_LAPSED: new paid resources answer 402 while the workspace has no active subscription. */
    blockLapsed: boolean;
    /** How often closed periods are looked for and their usage reported (SLIPWAY_BILLING_METER_INTERVAL_SECONDS). */
    meterIntervalMs: number;
  };
  /** The GitHub App (docs/github-and-sign-in.md, "GitHub pushes"): on when every SLIPWAY_GITHUB_* setting it needs is set. */
  github?: GitHubAppConfig;
  /** The router's HTTPS listener and ACME certificates (config-integrations.ts). */
  https: HttpsSettings;
  /** The data plane: the Node router alone, or nginx in front of it (src/router/nginx/); auto = nginx when installed. */
  router: {
    kind: 'auto' | 'node' | 'nginx';
    nginxWorkers: number;
    /** The Node router's worker processes (router/daemon/workers.ts), when it runs as a process of its own. */
    nodeWorkers: number;
    process: 'own' | 'api';
  };
}

export const DEFAULT_NETWORK_CIDR = '10.213.0.0/16';

export interface LogStreamSettings {
  /** SLIPWAY_LOG_STREAM_ALLOW_PRIVATE=1: endpoints may be loopback and private addresses too. */
  allowPrivate: boolean;
  /** SLIPWAY_LOG_STREAM_CA_FILE: PEM certificates trusted besides Node's roots. */
  caFile?: string;
  connectTimeoutMs: number;
  /** A batch the endpoint does not take within this long breaks the connection (it is sent again). */
  writeTimeoutMs: number;
  /** The first reconnect delay; it doubles per failure, up to a minute. */
  backoffMinMs: number;
}

export interface WebhookSettings {
  /** SLIPWAY_WEBHOOK_ALLOW_PRIVATE=1: deliver to loopback and private addresses too. */
  allowPrivate: boolean;
  timeoutMs: number;
  /** First retry delay; it doubles per attempt, up to 240 times this (2 h by default), with ±20 % jitter. */
  retryBaseMs: number;
  /** How long a delivery is retried before it is given up. */
  retryWindowMs: number;
  /** A webhook failing (no 2xx) this long is disabled. */
  disableAfterMs: number;
  /** Sends at once per process, per webhook (one while it is failing), and per workspace (its share of the process). */
  concurrency: number;
  concurrencyPerWebhook: number;
  concurrencyPerWorkspace: number;
  /** Webhooks one workspace may have: each event is queued once per matching webhook. */
  perWorkspace: number;
  /** How often the outbox is polled for due deliveries (an event recorded here wakes it at once). */
  pollMs: number;
}

export interface GitHubAppConfig {
  appId: string;
  /** The App's URL name: its installation page is `<webUrl>/apps/<slug>/installations/new`. */
  slug: string;
  /** PEM (PKCS#1 as GitHub hands it out, or PKCS#8); never logged. */
  privateKey: string;
  webhookSecret: string;
  /**
   * The App's OAuth client: GitHub's setup callback carries a user's code (the App asks for user authorization
   * during installation), which proves the installation is that user's to link.
   */
  clientId: string;
  clientSecret: string;
  /** github.com's, or GitHub Enterprise's (`https://ghe.example.com/api/v3`). */
  apiUrl: string;
  webUrl: string;
}

/** What the GitHub App needs, for the 501 that names what is missing. */
export const GITHUB_APP_SETTINGS = [
  'SLIPWAY_GITHUB_APP_ID',
  'SLIPWAY_GITHUB_APP_SLUG',
  'SLIPWAY_GITHUB_APP_PRIVATE_KEY (or SLIPWAY_GITHUB_APP_PRIVATE_KEY_FILE)',
  'SLIPWAY_GITHUB_WEBHOOK_SECRET',
  'SLIPWAY_GITHUB_APP_CLIENT_ID',
  'SLIPWAY_GITHUB_APP_CLIENT_SECRET',
];

export const OAUTH_PROVIDERS = ['github', 'google', 'apple'] as const;

export type OAuthProvider = (typeof OAUTH_PROVIDERS)[number];

/** GitHub's OAuth web flow (not OIDC): its authorize and token pages on `webUrl`, the user from `apiUrl`. */
export interface GitHubOAuthConfig {
  clientId: string;
  clientSecret: string;
  webUrl: string;
  apiUrl: string;
}

/** An OpenID Connect provider found by discovery at `issuer`. */
export interface OidcConfig {
  clientId: string;
  clientSecret: string;
  issuer: string;
}

/** Sign in with Apple: the client secret is an ES256 JWT Slipway makes from the team id, key id and private key. */
export interface AppleConfig {
  clientId: string;
  teamId: string;
  keyId: string;
  /** The `.p8` key (PKCS#8 PEM); never logged. */
  privateKey: string;
  issuer: string;
}

export interface OAuthSettings {
  github?: GitHubOAuthConfig;
  google?: OidcConfig;
  apple?: AppleConfig;
}

/** The router's HTTPS and the ACME server its custom domains' certificates come from. */
export interface HttpsSettings {
  /** The HTTPS listener's port (0: any free one); undefined: no HTTPS listener (`off`). */
  port: number | undefined;
  /** The port HTTP→HTTPS redirects name when it differs from the listener's (443 forwarded to 8443). */
  redirectPort: number | undefined;
  /** The apps domain's certificate (a wildcard); unset: a self-signed one made once. */
  certFile: string | undefined;
  keyFile: string | undefined;
  acme?: {
    directoryUrl: string;
    email: string | undefined;
    /** PEM trusted for the ACME server's own TLS (SLIPWAY_ACME_CA_BUNDLE names the file). */
    caBundle: string | undefined;
    /** Renewal starts this long before expiry, or at two thirds of a short lifetime. */
    renewBeforeMs: number;
  };
}

export interface BuildSettings {
  /** Each service's build disk in MiB (SLIPWAY_BUILD_DISK_MB): its source, build, HOME and dependency cache together. */
  diskMb: number;
  /** The largest artifact a build may leave, in MiB (SLIPWAY_ARTIFACT_MAX_MB). */
  artifactMaxMb: number;
  /** Builds that run at once on this Slipway (SLIPWAY_BUILD_CONCURRENCY); the rest wait, `queued`. */
  concurrency: number;
  /** Builds of one workspace that run at once (SLIPWAY_BUILD_CONCURRENCY_PER_WORKSPACE). */
  perWorkspace: number;
  /** The builds running at once may together be given at most this much memory, in MiB (SLIPWAY_BUILD_MEMORY_MB). */
  memoryMb: number;
  /** A poll (`git ls-remote`) takes at most, and a clone may receive nothing for at most, this long (SLIPWAY_GIT_TIMEOUT_SECONDS). */
  gitTimeoutMs: number;
}

export interface RouterStatus {
  kind: 'node' | 'nginx';
  /** The Node router's process (SLIPWAY_ROUTER_PROCESS=own): it outlives the API process. */
  process?: { pid: number; adopted: boolean; workers: number };
  /** nginx's master (SLIPWAY_ROUTER=nginx): the process that carries the apps' traffic, and outlives Slipway. */
  nginx?: { pid: number; adopted: boolean };
  /** nginx: the last configuration `nginx -t` refused (the one before it kept serving). */
  lastRejected?: { at: string; reason: string };
}

/** A bucket on S3-compatible storage for pgBackRest's repositories (SLIPWAY_BACKUP_S3_*). */
export interface BackupS3 {
  /** A host name: pgBackRest checks the certificate against names only. */
  endpoint: string;
  port: number;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** Where in the bucket ('' for its root; `/slipway` by default): each datastore's repository is `<prefix>/postgres/<id>`. */
  prefix: string;
  uriStyle: 'host' | 'path';
  /** The CA that signed the endpoint's certificate, when not the system's. */
  caFile: string | undefined;
}
