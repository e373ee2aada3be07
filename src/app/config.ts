import path from 'node:path';
import { availableParallelism } from 'node:os';
import { DEFAULT_TIMEOUT_SECONDS as TIMEOUTS } from '../lib/http-timeouts.js';
import { ipv4Range, overlaps } from '../lib/ip-ranges.js';
import { swarmSettings } from './config-swarm.js';
import { githubApp, httpsSettings, oauthSettings } from './config-integrations.js';
import { backupS3Settings } from './config-backups.js';
import { buildSettings } from './config-builds.js';
import { notificationSettings } from './config-notifications.js';
import { DEFAULT_NETWORK_CIDR, type Config } from '../model/settings.js';

// The shapes live in model/settings.ts (the layers below read them); this file reads them from the environment.
export { DEFAULT_NETWORK_CIDR, type Config };

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0) throw new Error(`${name} must be a non-negative integer, got "${raw}"`);
  return value;
}

/** A duration in seconds (fractions allowed, at least 0.1 s), as milliseconds. */
function secondsAsMs(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0.1)
    throw new Error(`${name} must be a number of seconds (at least 0.1), got "${raw}"`);
  return Math.round(value * 1000);
}

/** A number of CPUs (fractions allowed), as millicores. */
function cpus(env: Env, name: string, fallback: number): number {
  const raw = env[name];
  const value = raw === undefined || raw === '' ? fallback : Number(raw);
  if (!Number.isFinite(value) || value < 0.01)
    throw new Error(`${name} must be a number of CPUs (e.g. 2 or 0.5), got "${raw}"`);
  return Math.round(value * 1000);
}

function oneOf<T extends string>(env: Env, name: string, values: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(values as readonly string[]).includes(raw))
    throw new Error(`${name} must be one of ${values.join(', ')}, got "${raw}"`);
  return raw as T;
}

/** An integer from 1 to `max`, or undefined when unset. */
function optionalPositive(env: Env, name: string, max: number): number | undefined {
  if (env[name] === undefined || env[name] === '') return undefined;
  const value = int(env, name, 0);
  if (value < 1 || value > max)
    throw new Error(`${name} must be a positive integer, at most ${max}, got "${env[name]}"`);
  return value;
}

const list = (value: string | undefined) =>
  (value ?? '')
    .split(',')
    .map((v) => v.trim())
    .filter(Boolean);

/** SLIPWAY_EGRESS_ALLOW: IPv4 CIDRs or addresses, none overlapping the workspaces' range (that would open the others'). */
function egressAllow(raw: string | undefined, networkCidr: string): string[] {
  const workspaces = ipv4Range(networkCidr);
  return list(raw).map((entry) => {
    const range = ipv4Range(entry);
    if (!range)
      throw new Error(
        `SLIPWAY_EGRESS_ALLOW must list IPv4 CIDRs or addresses (e.g. 192.168.10.0/24,10.1.2.3), got "${entry}"`,
      );
    if (overlaps(range, ipv4Range('127.0.0.0/8')!))
      throw new Error(
        `SLIPWAY_EGRESS_ALLOW cannot open ${entry}: loopback is each namespace's own; list the address of this machine (or of the server) that the server listens on`,
      );
    if (workspaces && overlaps(range, workspaces))
      throw new Error(
        `SLIPWAY_EGRESS_ALLOW cannot open ${entry}: it overlaps SLIPWAY_NETWORK_CIDR (${networkCidr}), the workspaces' own networks`,
      );
    return entry;
  });
}

export function loadConfig(env: Env = process.env): Config {
  const host = env.SLIPWAY_HOST || '127.0.0.1';
  const port = int(env, 'SLIPWAY_PORT', 8000);
  return {
    host,
    port,
    dataDir: path.resolve(env.SLIPWAY_DATA_DIR || './.slipway'),
    databaseUrl: env.DATABASE_URL || undefined,
    publicUrl: (env.SLIPWAY_PUBLIC_URL || `http://127.0.0.1:${port}`).replace(/\/+$/, ''),
    routerPort: int(env, 'SLIPWAY_ROUTER_PORT', 8080),
    appsDomain: env.SLIPWAY_APPS_DOMAIN || 'localhost',
    operatorToken: env.SLIPWAY_OPERATOR_TOKEN || undefined,
    organizationId: env.SLIPWAY_ORGANIZATION_ID || 'org-slipway',
    secretKey: env.SLIPWAY_SECRET_KEY || undefined,
    logLevel: env.SLIPWAY_LOG_LEVEL || 'info',
    bodyLimitBytes: int(env, 'SLIPWAY_BODY_LIMIT_BYTES', 1024 * 1024),
    // Node refuses a headers timeout above the request timeout.
    headersTimeoutMs: Math.min(
      secondsAsMs(env, 'SLIPWAY_HEADERS_TIMEOUT_SECONDS', TIMEOUTS.headers),
      secondsAsMs(env, 'SLIPWAY_REQUEST_TIMEOUT_SECONDS', TIMEOUTS.request),
    ),
    requestTimeoutMs: secondsAsMs(env, 'SLIPWAY_REQUEST_TIMEOUT_SECONDS', TIMEOUTS.request),
    keepAliveTimeoutMs: secondsAsMs(env, 'SLIPWAY_KEEP_ALIVE_TIMEOUT_SECONDS', TIMEOUTS.keepAlive),
    upstreamTimeoutMs: secondsAsMs(env, 'SLIPWAY_UPSTREAM_TIMEOUT_SECONDS', TIMEOUTS.upstream),
    rateLimitPerMinute: int(env, 'SLIPWAY_RATE_LIMIT_PER_MINUTE', 1200),
    authRateLimitPerMinute: int(env, 'SLIPWAY_AUTH_RATE_LIMIT_PER_MINUTE', 10),
    authAccountAttemptsPer10Minutes: int(env, 'SLIPWAY_AUTH_ACCOUNT_ATTEMPTS_PER_10_MINUTES', 10),
    sessionTtlDays: int(env, 'SLIPWAY_SESSION_TTL_DAYS', 30),
    inviteTtlDays: int(env, 'SLIPWAY_INVITE_TTL_DAYS', 7),
    principalCacheMs: int(env, 'SLIPWAY_PRINCIPAL_CACHE_SECONDS', 30) * 1000,
    readCacheMs: int(env, 'SLIPWAY_READ_CACHE_SECONDS', 60) * 1000,
    apiKeyTouchMs: secondsAsMs(env, 'SLIPWAY_API_KEY_TOUCH_SECONDS', 60),
    routerHost: env.SLIPWAY_ROUTER_HOST || host,
    maxUploadBytes: int(env, 'SLIPWAY_MAX_UPLOAD_BYTES', 100 * 1024 * 1024),
    archiveMaxFiles: int(env, 'SLIPWAY_ARCHIVE_MAX_FILES', 50_000),
    archiveMaxBytes: int(env, 'SLIPWAY_ARCHIVE_MAX_BYTES', 1024 * 1024 * 1024),
    buildTimeoutSeconds: int(env, 'SLIPWAY_BUILD_TIMEOUT_SECONDS', 900),
    buildPlans: {
      starter: {
        memoryMb: Math.max(64, int(env, 'SLIPWAY_BUILD_STARTER_MEMORY_MB', 2048)),
        cpuMillicores: cpus(env, 'SLIPWAY_BUILD_STARTER_CPUS', 2),
      },
      performance: {
        memoryMb: Math.max(64, int(env, 'SLIPWAY_BUILD_PERFORMANCE_MEMORY_MB', 8192)),
        cpuMillicores: cpus(env, 'SLIPWAY_BUILD_PERFORMANCE_CPUS', 4),
      },
    },
    buildCacheMb: int(env, 'SLIPWAY_BUILD_CACHE_MB', 4096),
    builds: buildSettings(env, Math.max(64, int(env, 'SLIPWAY_BUILD_STARTER_MEMORY_MB', 2048))),
    npmRegistry: env.SLIPWAY_NPM_REGISTRY || 'https://registry.npmjs.org',
    corepackIntegrityKeys: env.SLIPWAY_COREPACK_INTEGRITY_KEYS,
    nodeCacheDir: env.SLIPWAY_NODE_CACHE_DIR ? path.resolve(env.SLIPWAY_NODE_CACHE_DIR) : undefined,
    nodeReleasesMax: Math.max(1, int(env, 'SLIPWAY_NODE_RELEASES_MAX', 12)),
    pidsLimit: optionalPositive(env, 'SLIPWAY_PIDS_LIMIT', 4_194_304), // the kernel's PID_MAX_LIMIT: pids.max refuses more
    diskLimitMb: optionalPositive(env, 'SLIPWAY_DISK_LIMIT_MB', 1_048_576), // 1 TiB: bwrap's --size takes no exponent notation
    healthCheckTimeoutSeconds: int(env, 'SLIPWAY_HEALTH_CHECK_TIMEOUT_SECONDS', 300),
    keepArtifacts: Math.max(1, int(env, 'SLIPWAY_KEEP_ARTIFACTS', 5)),
    serviceDiskMb: Math.max(1, int(env, 'SLIPWAY_SERVICE_DISK_MB', 16_384)),
    crashCheckMs: Math.max(100, int(env, 'SLIPWAY_CRASH_CHECK_MS', 1000)),
    crashBackoffMs: int(env, 'SLIPWAY_CRASH_BACKOFF_MS', 1000),
    blueprintSyncStaleMs: Math.max(300, int(env, 'SLIPWAY_BLUEPRINT_SYNC_STALE_MS', 30_000)),
    blueprintParseMs: secondsAsMs(env, 'SLIPWAY_BLUEPRINT_PARSE_SECONDS', 10),
    blueprintParseMemoryMb: Math.max(64, int(env, 'SLIPWAY_BLUEPRINT_PARSE_MEMORY_MB', 512)),
    webhooks: {
      allowPrivate: env.SLIPWAY_WEBHOOK_ALLOW_PRIVATE === '1' || env.SLIPWAY_WEBHOOK_ALLOW_PRIVATE === 'true',
      timeoutMs: Math.max(100, int(env, 'SLIPWAY_WEBHOOK_TIMEOUT_MS', 15_000)),
      retryBaseMs: Math.max(10, int(env, 'SLIPWAY_WEBHOOK_RETRY_BASE_MS', 30_000)),
      retryWindowMs: Math.max(1000, int(env, 'SLIPWAY_WEBHOOK_RETRY_WINDOW_MS', 24 * 3600_000)),
      disableAfterMs: Math.max(1000, int(env, 'SLIPWAY_WEBHOOK_DISABLE_AFTER_MS', 3 * 24 * 3600_000)),
      concurrency: Math.max(1, int(env, 'SLIPWAY_WEBHOOK_CONCURRENCY', 32)),
      concurrencyPerWebhook: Math.max(1, int(env, 'SLIPWAY_WEBHOOK_CONCURRENCY_PER_WEBHOOK', 4)),
      concurrencyPerWorkspace: Math.max(1, int(env, 'SLIPWAY_WEBHOOK_CONCURRENCY_PER_WORKSPACE', 8)),
      pollMs: Math.max(10, int(env, 'SLIPWAY_WEBHOOK_POLL_MS', 250)),
      perWorkspace: Math.max(1, int(env, 'SLIPWAY_WEBHOOKS_PER_WORKSPACE', 25)),
    },
    notifications: notificationSettings(env),
    logStreams: {
      allowPrivate: env.SLIPWAY_LOG_STREAM_ALLOW_PRIVATE === '1' || env.SLIPWAY_LOG_STREAM_ALLOW_PRIVATE === 'true',
      caFile: env.SLIPWAY_LOG_STREAM_CA_FILE ? path.resolve(env.SLIPWAY_LOG_STREAM_CA_FILE) : undefined,
      connectTimeoutMs: Math.max(100, int(env, 'SLIPWAY_LOG_STREAM_CONNECT_TIMEOUT_MS', 10_000)),
      writeTimeoutMs: Math.max(100, int(env, 'SLIPWAY_LOG_STREAM_WRITE_TIMEOUT_MS', 30_000)),
      backoffMinMs: Math.max(10, int(env, 'SLIPWAY_LOG_STREAM_BACKOFF_MS', 1000)),
    },
    metricsStreams: {
      allowPrivate:
        env.SLIPWAY_METRICS_STREAM_ALLOW_PRIVATE === '1' || env.SLIPWAY_METRICS_STREAM_ALLOW_PRIVATE === 'true',
      intervalMs: Math.max(1000, secondsAsMs(env, 'SLIPWAY_METRICS_STREAM_INTERVAL', 60)),
      timeoutMs: 10_000,
    },
    network: oneOf(env, 'SLIPWAY_NETWORK', ['auto', 'namespaces', 'shared'] as const, 'auto'),
    router: {
      kind: oneOf(env, 'SLIPWAY_ROUTER', ['auto', 'node', 'nginx'] as const, 'auto'),
      nginxWorkers: int(env, 'SLIPWAY_ROUTER_NGINX_WORKERS', 1),
      // One nginx worker forwards about twice what one Node process does: the Node router takes the cores it has.
      nodeWorkers: Math.min(
        64,
        Math.max(1, int(env, 'SLIPWAY_ROUTER_NODE_WORKERS', Math.min(4, availableParallelism()))),
      ),
      // own: the Node router runs as a process of its own that outlives the API (src/router/daemon/); api: inside it.
      process: oneOf(env, 'SLIPWAY_ROUTER_PROCESS', ['own', 'api'] as const, 'own'),
    },
    networkCidr: env.SLIPWAY_NETWORK_CIDR || DEFAULT_NETWORK_CIDR,
    egressAllow: egressAllow(env.SLIPWAY_EGRESS_ALLOW, env.SLIPWAY_NETWORK_CIDR || DEFAULT_NETWORK_CIDR),
    containers: oneOf(env, 'SLIPWAY_CONTAINERS', ['auto', 'off'] as const, 'auto'),
    containerDiskMb: optionalPositive(env, 'SLIPWAY_CONTAINER_DISK_MB', 16_777_216), // 16 TiB: ext4's limit
    swarm: swarmSettings(env),
    insecureRegistries: (env.SLIPWAY_CONTAINER_INSECURE_REGISTRIES ?? '')
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean),
    sandbox: oneOf(env, 'SLIPWAY_SANDBOX', ['auto', 'bwrap', 'off'] as const, 'auto'),
    postgresAdminUrl: env.SLIPWAY_POSTGRES_ADMIN_URL || undefined,
    redisAdminUrl: env.SLIPWAY_REDIS_ADMIN_URL || undefined,
    localDatastores: env.SLIPWAY_LOCAL_DATASTORES !== '0' && env.SLIPWAY_LOCAL_DATASTORES !== 'false',
    backupDir: path.resolve(env.SLIPWAY_BACKUP_DIR || path.join(env.SLIPWAY_DATA_DIR || './.slipway', 'backups')),
    backupS3: backupS3Settings(env),
    backupCheckMs: Math.max(100, int(env, 'SLIPWAY_BACKUP_CHECK_MS', 60_000)),
    backupRetryMs: Math.max(100, int(env, 'SLIPWAY_BACKUP_RETRY_MS', 10 * 60_000)),
    diskCheckMs: Math.max(100, int(env, 'SLIPWAY_DISK_CHECK_MS', 60_000)),
    diskMaxGb: Math.max(1, int(env, 'SLIPWAY_DISK_MAX_GB', 50)),
    stateBackups: env.SLIPWAY_STATE_BACKUP_DIR
      ? {
          dir: path.resolve(env.SLIPWAY_STATE_BACKUP_DIR),
          everyMs: secondsAsMs(env, 'SLIPWAY_STATE_BACKUP_SECONDS', 86_400),
          keep: Math.max(1, int(env, 'SLIPWAY_STATE_BACKUP_KEEP', 7)),
        }
      : undefined,
    gitAllowLocal: env.SLIPWAY_GIT_ALLOW_LOCAL === '1' || env.SLIPWAY_GIT_ALLOW_LOCAL === 'true',
    dnsServers: list(env.SLIPWAY_DNS_SERVERS),
    routerPublicIps: list(env.SLIPWAY_ROUTER_PUBLIC_IPS),
    domainCheckMs: Math.max(100, int(env, 'SLIPWAY_DOMAIN_CHECK_MS', 10_000)),
    domainRetryMs: Math.max(100, int(env, 'SLIPWAY_DOMAIN_RETRY_MS', 30_000)),
    domainsPerService: Math.max(2, int(env, 'SLIPWAY_DOMAINS_PER_SERVICE', 50)),
    gitPollIntervalMs: Math.max(0, int(env, 'SLIPWAY_GIT_POLL_INTERVAL_MS', 60_000)),
    datastoreCheckMs: Math.max(100, int(env, 'SLIPWAY_DATASTORE_CHECK_MS', 5000)),
    logRetentionDays: Math.max(1, int(env, 'SLIPWAY_LOG_RETENTION_DAYS', 7)),
    logMaxBytesPerService: int(env, 'SLIPWAY_LOG_MAX_BYTES_PER_SERVICE', 100 * 1024 * 1024),
    logStreamBufferBytes: Math.max(1024, int(env, 'SLIPWAY_LOG_STREAM_BUFFER_BYTES', 1024 * 1024)),
    logQueryMs: secondsAsMs(env, 'SLIPWAY_LOG_QUERY_SECONDS', 2),
    logQueryBytes: Math.max(1, int(env, 'SLIPWAY_LOG_QUERY_SCAN_MB', 64)) * 1024 * 1024,
    logPollMs: Math.max(10, int(env, 'SLIPWAY_LOG_POLL_MS', 50)),
    logRateLines: Math.max(1, int(env, 'SLIPWAY_LOG_RATE_LINES', 2000)),
    logBurstLines: Math.max(1, int(env, 'SLIPWAY_LOG_BURST_LINES', 10_000)),
    requestLogRateLines: Math.max(1, int(env, 'SLIPWAY_REQUEST_LOG_RATE_LINES', 200)),
    requestLogBurstLines: Math.max(1, int(env, 'SLIPWAY_REQUEST_LOG_BURST_LINES', 2000)),
    metricsIntervalMs: secondsAsMs(env, 'SLIPWAY_METRICS_INTERVAL', 10),
    /** Autoscaling (docs/deploys.md, "Scaling"): how often it looks, and the waits after a change before the next. */
    autoscale: {
      intervalMs: secondsAsMs(env, 'SLIPWAY_AUTOSCALE_INTERVAL', 30),
      upCooldownMs: secondsAsMs(env, 'SLIPWAY_AUTOSCALE_UP_COOLDOWN', 60),
      downCooldownMs: secondsAsMs(env, 'SLIPWAY_AUTOSCALE_DOWN_COOLDOWN', 300),
      warmupMs: secondsAsMs(env, 'SLIPWAY_AUTOSCALE_WARMUP', 30),
    },
    usageIntervalMs: secondsAsMs(env, 'SLIPWAY_USAGE_INTERVAL_SECONDS', 60),
    priceCatalogPath: env.SLIPWAY_PRICE_CATALOG || undefined,
    stripe: {
      secretKey: env.SLIPWAY_STRIPE_SECRET_KEY || undefined,
      apiUrl: env.SLIPWAY_STRIPE_API_URL || undefined,
      webhookSecret: env.SLIPWAY_STRIPE_WEBHOOK_SECRET || undefined,
      meterEvent: env.SLIPWAY_STRIPE_METER_EVENT || 'slipway_usage',
      meteredPrice: env.SLIPWAY_STRIPE_METERED_PRICE || undefined,
      blockLapsed: env.SLIPWAY_BILLING_BLOCK_LAPSED === '1' || env.SLIPWAY_BILLING_BLOCK_LAPSED === 'true',
      meterIntervalMs: secondsAsMs(env, 'SLIPWAY_BILLING_METER_INTERVAL_SECONDS', 3600),
    },
    github: githubApp(env),
    https: httpsSettings(env),
    oauth: oauthSettings(env),
  };
}
