import { KEY_VALUE_PLANS } from '../datastores/plans.js';
import { PLANS } from '../../model/services.js';

/**
 * Render's Blueprint specification (render.yaml) as data: the keys each object takes, the allowed values, and what
 * this Slipway cannot run (warnings, never errors: a valid file is never refused for it). docs/blueprints.md.
 */

export const SERVICE_TYPES = ['web', 'pserv', 'worker', 'cron', 'keyvalue', 'workflow', 'redis'] as const;
export const RUNTIMES = ['node', 'python', 'elixir', 'go', 'ruby', 'rust', 'docker', 'image', 'static'] as const;
export const REGIONS = ['oregon', 'ohio', 'virginia', 'frankfurt', 'singapore'] as const;
export const AUTO_DEPLOY_TRIGGERS = ['commit', 'checksPass', 'off'] as const;
export const PREVIEW_GENERATIONS = ['off', 'manual', 'automatic'] as const;
export const MAXMEMORY_POLICIES = [
  'allkeys-lru',
  'volatile-lru',
  'allkeys-lfu',
  'volatile-lfu',
  'allkeys-random',
  'volatile-random',
  'volatile-ttl',
  'noeviction',
] as const;
/** Service and key-value plans: the ones Slipway has (Render's names). */
export const SERVICE_PLANS = PLANS;
export { KEY_VALUE_PLANS };
const SIZES = (prefix: string, gb: number[]) => gb.map((n) => `${prefix}_${n}gb`);
export const DATABASE_PLANS = [
  'free',
  'basic_256mb',
  'basic_1gb',
  'basic_4gb',
  ...SIZES('pro', [4, 8, 16, 32, 64, 128, 192, 256, 384, 512]),
  ...SIZES('accelerated', [16, 32, 64, 128, 256, 384, 512, 768, 1024]),
  // Legacy plans: existing databases only on Render.
  'starter',
  'standard',
  'pro',
  'pro_plus',
] as const;
export const DATABASE_PROPERTIES = ['connectionString', 'user', 'password', 'database', 'host', 'port'] as const;
export const SERVICE_PROPERTIES = ['host', 'port', 'hostport', 'connectionString'] as const;

/** Plans are written `pro plus`, `Pro-Plus`, `basic-1gb`, `Basic-1gb`, `basic_256mb` in real files: one spelling. */
export const normalizePlan = (plan: string) =>
  plan
    .trim()
    .toLowerCase()
    .replace(/[\s-]+/g, '_');

export const TOP_KEYS = [
  'services',
  'databases',
  'envVarGroups',
  'projects',
  'ungrouped',
  'previews',
  'previewsEnabled',
  'previewsExpireAfterDays',
  'version',
] as const;
export const SERVICE_KEYS = [
  'name',
  'type',
  'runtime',
  'env',
  'plan',
  'region',
  'repo',
  'branch',
  'rootDir',
  'buildCommand',
  'startCommand',
  'preDeployCommand',
  'schedule',
  'autoDeployTrigger',
  'autoDeploy',
  'domains',
  'healthCheckPath',
  'maxShutdownDelaySeconds',
  'numInstances',
  'scaling',
  'buildFilter',
  'disk',
  'envVars',
  'previews',
  'pullRequestPreviewsEnabled',
  'ipAllowList',
  'dockerCommand',
  'dockerfilePath',
  'dockerContext',
  'registryCredential',
  'image',
  'staticPublishPath',
  'headers',
  'routes',
  'maxmemoryPolicy',
  'previewPlan',
  // In Render's own recent templates, not in its docs.
  'initialDeployHook',
] as const;
/** Service fields whose value is a plain string. */
export const SERVICE_STRING_KEYS = [
  ...['repo', 'branch', 'rootDir', 'buildCommand', 'startCommand', 'preDeployCommand', 'healthCheckPath', 'schedule'],
  ...['dockerCommand', 'dockerfilePath', 'dockerContext', 'staticPublishPath'],
] as const;
export const DATABASE_KEYS = [
  'name',
  'plan',
  'previewPlan',
  'diskSizeGB',
  'previewDiskSizeGB',
  'region',
  'ipAllowList',
  'postgresMajorVersion',
  'databaseName',
  'user',
  'readReplicas',
  'highAvailability',
  'storageAutoscalingEnabled',
] as const;
export const ENV_VAR_KEYS = [
  'key',
  'value',
  'generateValue',
  'sync',
  'fromDatabase',
  'fromService',
  'fromGroup',
  'previewValue',
  // In Render's own recent templates, not in its docs.
  'displayName',
  'description',
  'sensitive',
] as const;
/** Objects nested in a service or database: their keys, and which are required. */
export const NESTED: Record<string, { keys: readonly string[]; required?: readonly string[] }> = {
  scaling: {
    keys: ['minInstances', 'maxInstances', 'targetCPUPercent', 'targetMemoryPercent'],
    required: ['minInstances', 'maxInstances'],
  },
  buildFilter: { keys: ['paths', 'ignoredPaths'] },
  disk: { keys: ['name', 'mountPath', 'sizeGB'], required: ['name', 'mountPath'] },
  image: { keys: ['url', 'creds'], required: ['url'] },
  // A docker service's `registryCredential` and an image's `creds`: `{fromRegistryCreds: {name}}`.
  registryCredential: { keys: ['fromRegistryCreds'], required: ['fromRegistryCreds'] },
  fromRegistryCreds: { keys: ['name'], required: ['name'] },
  servicePreviews: { keys: ['generation', 'plan', 'numInstances'] },
  topPreviews: { keys: ['generation', 'expireAfterDays'] },
  ipAllowList: { keys: ['source', 'description'], required: ['source'] },
  headers: { keys: ['path', 'name', 'value'], required: ['path', 'name', 'value'] },
  routes: { keys: ['type', 'source', 'destination'], required: ['type', 'source', 'destination'] },
  fromDatabase: { keys: ['name', 'property'], required: ['name', 'property'] },
  fromService: { keys: ['name', 'type', 'property', 'envVarKey'], required: ['name', 'type'] },
  highAvailability: { keys: ['enabled'] },
  readReplicas: { keys: ['name'], required: ['name'] },
  envVarGroup: { keys: ['name', 'envVars'], required: ['name'] },
  project: { keys: ['name', 'environments'], required: ['name', 'environments'] },
  environment: {
    keys: ['name', 'services', 'databases', 'envVarGroups', 'networking', 'permissions'],
    required: ['name'],
  },
  ungrouped: { keys: ['services', 'databases', 'envVarGroups'] },
};

/** What a valid file may ask that this Slipway does not do: the plan says so per resource, and a sync skips it. */
export const UNSUPPORTED_SERVICE_KEYS: Record<string, string> = {
  scaling: 'autoscaling is not supported here: numInstances (or 1) instances run',
  previews: 'preview environments are not supported here',
  pullRequestPreviewsEnabled: 'preview environments are not supported here',
  initialDeployHook: 'initialDeployHook is not supported here',
};
/** Service fields read for one runtime only (`dockerfilePath` on a node service is ignored, and said so). */
export const RUNTIME_ONLY_KEYS: Record<string, string> = {
  dockerfilePath: 'docker',
  dockerContext: 'docker',
  dockerCommand: 'docker',
  registryCredential: 'docker',
  image: 'image',
};
