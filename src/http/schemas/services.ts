import { Type, type Static } from '@sinclair/typebox';
import type { AppUrls } from '../../core/service-state/env.js';
import type { DeployRow } from '../../store/repos/deploys.js';
import type { ServiceRow } from '../../store/repos/services.js';
import { AUTO_DEPLOY, BUILD_PLANS, ENV_VAR_REF_PROPERTIES, SERVICE_TYPES, SUSPENDED } from '../../model/enums.js';
import { MAX_INSTANCES, PLANS, registryCredentialIdOf, RUNTIMES } from '../../model/services.js';
import { literalUnion, ManagedBy, Name, Timestamp } from './common.js';

const Enum = <T extends string>(values: readonly T[]) => Type.Unsafe<T>({ type: 'string', enum: [...values] });
const Command = Type.String({ maxLength: 4096 });

export const AutoDeploy = literalUnion(AUTO_DEPLOY);
const GitUrl = Type.String({ minLength: 1, maxLength: 2048 });
const RootDir = Type.String({ maxLength: 1024 });

/** Render's serviceDetails (POST/PATCH): one loose object covering every service type. */
export const ServiceDetailsInput = Type.Object({
  runtime: Type.Optional(Enum(RUNTIMES)),
  env: Type.Optional(Enum(RUNTIMES)),
  plan: Type.Optional(Enum(PLANS)),
  buildPlan: Type.Optional(Enum(BUILD_PLANS)),
  region: Type.Optional(Type.String({ maxLength: 50 })),
  numInstances: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_INSTANCES })),
  healthCheckPath: Type.Optional(Type.String({ maxLength: 1024 })),
  buildCommand: Type.Optional(Command),
  publishPath: Type.Optional(Type.String({ maxLength: 1024 })),
  preDeployCommand: Type.Optional(Command),
  maxShutdownDelaySeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 300 })),
  schedule: Type.Optional(Type.String({ maxLength: 200 })),
  previews: Type.Optional(
    Type.Object({ generation: Type.Union([Type.Literal('off'), Type.Literal('manual'), Type.Literal('automatic')]) }),
  ),
  pullRequestPreviewsEnabled: Type.Optional(Type.Union([Type.Literal('yes'), Type.Literal('no')])),
  /** Render's maintenanceMode of a web service: switched without a deploy (docs/routing.md, "Maintenance mode"). */
  maintenanceMode: Type.Optional(
    Type.Object({ enabled: Type.Optional(Type.Boolean()), uri: Type.Optional(Type.String({ maxLength: 2048 })) }),
  ),
  envSpecificDetails: Type.Optional(
    Type.Object({
      buildCommand: Type.Optional(Command),
      startCommand: Type.Optional(Command),
      preDeployCommand: Type.Optional(Command),
      dockerCommand: Type.Optional(Command),
      dockerContext: Type.Optional(RootDir),
      dockerfilePath: Type.Optional(RootDir),
      registryCredentialId: Type.Optional(Type.String({ maxLength: 64 })),
    }),
  ),
});

/** Render's `image` (an image service's, POST and PATCH). */
const ImageInput = Type.Object({
  ownerId: Type.Optional(Type.String({ maxLength: 64 })),
  imagePath: Type.String({ minLength: 1, maxLength: 512 }),
  registryCredentialId: Type.Optional(Type.String({ maxLength: 64 })),
});

const EnvKey = Type.String({ minLength: 1, maxLength: 256 });
/** A datastore reference: `{id, property}`, resolved when the app's environment is built. */
export const EnvVarRefInput = Type.Object(
  {
    id: Type.String({ minLength: 1, maxLength: 64 }),
    property: literalUnion(ENV_VAR_REF_PROPERTIES),
  },
  { additionalProperties: false },
);
export const EnvVarInput = Type.Union([
  Type.Object({ key: EnvKey, value: Type.String({ maxLength: 65536 }) }, { additionalProperties: false }),
  Type.Object({ key: EnvKey, generateValue: Type.Boolean() }, { additionalProperties: false }),
  Type.Object({ key: EnvKey, fromDatabase: EnvVarRefInput }, { additionalProperties: false }),
  Type.Object({ key: EnvKey, fromKeyValue: EnvVarRefInput }, { additionalProperties: false }),
]);
/** The body of a single-key PUT: the input without its key. */
export const EnvVarValueInput = Type.Union([
  Type.Object({ value: Type.String({ maxLength: 65536 }) }),
  Type.Object({ generateValue: Type.Boolean() }),
  Type.Object({ fromDatabase: EnvVarRefInput }),
  Type.Object({ fromKeyValue: EnvVarRefInput }),
]);
/** Render's envVar, plus the reference a value comes from. */
export const EnvVarBody = Type.Object(
  {
    key: Type.String(),
    value: Type.String(),
    fromDatabase: Type.Optional(EnvVarRefInput),
    fromKeyValue: Type.Optional(EnvVarRefInput),
  },
  { title: 'envVar' },
);
export const EnvVarInputArray = Type.Array(EnvVarInput, { maxItems: 500 });

const FilterPaths = Type.Array(Type.String({ minLength: 1, maxLength: 512 }), { maxItems: 100 });
/** Render's buildFilter: which changed paths a push must touch to deploy (and which never count). */
export const BuildFilter = Type.Object(
  { paths: Type.Optional(FilterPaths), ignoredPaths: Type.Optional(FilterPaths) },
  { additionalProperties: false },
);

export const ServicePOST = Type.Object({
  type: Enum(SERVICE_TYPES),
  name: Name,
  ownerId: Type.Optional(Type.String({ maxLength: 64 })),
  repo: Type.Optional(GitUrl),
  branch: Type.Optional(Type.String({ maxLength: 255 })),
  rootDir: Type.Optional(RootDir),
  autoDeploy: Type.Optional(AutoDeploy),
  buildFilter: Type.Optional(BuildFilter),
  environmentId: Type.Optional(Type.String({ maxLength: 64 })),
  envVars: Type.Optional(EnvVarInputArray),
  serviceDetails: Type.Optional(ServiceDetailsInput),
  image: Type.Optional(ImageInput),
});
export type ServicePOST = Static<typeof ServicePOST>;

/** Closed: a field in the wrong place (a top-level `plan`) is a 400, not a 200 that changed nothing. */
export const ServicePATCH = Type.Object(
  {
    name: Type.Optional(Name),
    repo: Type.Optional(Type.String({ maxLength: 2048 })),
    branch: Type.Optional(Type.String({ maxLength: 255 })),
    rootDir: Type.Optional(RootDir),
    autoDeploy: Type.Optional(AutoDeploy),
    buildFilter: Type.Optional(BuildFilter),
    serviceDetails: Type.Optional(ServiceDetailsInput),
    image: Type.Optional(ImageInput),
  },
  { additionalProperties: false },
);

/** Render's `service`; serviceDetails carries the fields of the service's type. */
export const ServiceBody = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    ownerId: Type.String(),
    type: Type.String(),
    slug: Type.String(),
    repo: Type.Optional(Type.String()),
    branch: Type.Optional(Type.String()),
    rootDir: Type.String(),
    autoDeploy: AutoDeploy,
    buildFilter: Type.Optional(
      Type.Object({ paths: Type.Array(Type.String()), ignoredPaths: Type.Array(Type.String()) }),
    ),
    notifyOnFail: Type.String(),
    environmentId: Type.Optional(Type.String()),
    suspended: literalUnion(SUSPENDED),
    suspenders: Type.Array(Type.String()),
    dashboardUrl: Type.String(),
    imagePath: Type.Optional(Type.String()),
    registryCredential: Type.Optional(Type.Object({ id: Type.String(), name: Type.String() })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    serviceDetails: Type.Record(Type.String(), Type.Unknown()),
    blueprint: ManagedBy,
  },
  { title: 'service' },
);

/** Render's serviceAndDeploy: a created service and, when one started, its first deploy. */
export const ServiceAndDeploy = Type.Object(
  { service: ServiceBody, deployId: Type.Optional(Type.String()) },
  { title: 'serviceAndDeploy' },
);

/** Render's previewInput: another tag or digest of an image service's image. */
export const ServicePreviewPOST = Type.Object({
  imagePath: Type.String({ minLength: 1, maxLength: 512 }),
  name: Type.Optional(Name),
  plan: Type.Optional(Enum(PLANS)),
});

/** Render's previews (with its deprecated twin) and, on a preview, `parentServer`. */
const previewFields = (d: ServiceRow['details']) => {
  const generation = d.previews?.generation ?? 'off';
  return {
    previews: { generation },
    pullRequestPreviewsEnabled: generation === 'off' ? 'no' : 'yes',
    ...(d.parentServer ? { parentServer: d.parentServer } : {}),
  };
};

/** Render's envSpecificDetails: dockerDetails for docker (and image) services, nativeEnvironmentDetails else. */
function envSpecificDetails(d: ServiceRow['details']) {
  const preDeploy = d.preDeployCommand ? { preDeployCommand: d.preDeployCommand } : {};
  if (d.runtime === 'docker' || d.runtime === 'image')
    return {
      dockerCommand: d.docker?.dockerCommand ?? '',
      dockerContext: d.docker?.dockerContext || '.',
      dockerfilePath: d.docker?.dockerfilePath || './Dockerfile',
      ...preDeploy,
    };
  return { buildCommand: d.buildCommand, startCommand: d.startCommand, ...preDeploy };
}

/**
 * Render's `service`. `credentialName` is its registry credential's (core/registry-credentials.ts `namesFor`); without
 * one (a credential of another workspace) the summary, whose name Render requires, shows the id.
 */
export function serviceBody(
  row: ServiceRow,
  urls: Pick<AppUrls, 'externalUrl' | 'dashboardUrl'>,
  credentialName?: string,
) {
  const d = row.details;
  const credentialId = registryCredentialIdOf(d);
  const credential = credentialId ? { id: credentialId, name: credentialName ?? credentialId } : undefined;
  const common = {
    env: d.runtime,
    runtime: d.runtime,
    envSpecificDetails: envSpecificDetails(d),
    plan: d.plan,
    region: d.region,
    buildPlan: d.buildPlan ?? 'starter',
    ...previewFields(d),
  };
  const url = urls.externalUrl(row.slug);
  const details: Record<string, unknown> =
    row.type === 'static_site'
      ? {
          buildCommand: d.buildCommand,
          publishPath: d.publishPath,
          url,
          buildPlan: d.buildPlan ?? 'starter',
          ...previewFields(d),
        }
      : row.type === 'cron_job'
        ? { ...common, schedule: d.schedule }
        : row.type === 'background_worker'
          ? {
              ...common,
              numInstances: d.numInstances,
              maxShutdownDelaySeconds: d.maxShutdownDelaySeconds,
              ...(d.autoscaling ? { autoscaling: d.autoscaling } : {}),
            }
          : {
              ...common,
              numInstances: d.numInstances,
              maxShutdownDelaySeconds: d.maxShutdownDelaySeconds,
              ...(d.autoscaling ? { autoscaling: d.autoscaling } : {}),
              openPorts: [],
              url: row.type === 'web_service' ? url : '',
              ...(row.type === 'web_service'
                ? {
                    healthCheckPath: d.healthCheckPath,
                    maintenanceMode: d.maintenanceMode ?? { enabled: false, uri: '' },
                  }
                : {}),
            };
  return {
    id: row.id,
    name: row.name,
    ownerId: row.workspaceId,
    type: row.type,
    slug: row.slug,
    ...(row.repo ? { repo: row.repo } : {}),
    ...(row.branch ? { branch: row.branch } : {}),
    rootDir: row.rootDir,
    autoDeploy: row.autoDeploy,
    ...(d.buildFilter ? { buildFilter: d.buildFilter } : {}),
    notifyOnFail: 'default',
    ...(d.image ? { imagePath: d.image.imagePath } : {}),
    ...(credential ? { registryCredential: credential } : {}),
    ...(row.environmentId ? { environmentId: row.environmentId } : {}),
    suspended: row.suspenders.length ? ('suspended' as const) : ('not_suspended' as const),
    suspenders: row.suspenders,
    dashboardUrl: urls.dashboardUrl(row.id),
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    serviceDetails: details,
  };
}

/** Render's `deploy`, plus Slipway's build output and failure reason. */
export const DeployBody = Type.Object(
  {
    id: Type.String(),
    status: Type.String(),
    trigger: Type.String(),
    commit: Type.Optional(Type.Object({ id: Type.String(), message: Type.Optional(Type.String()) })),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    startedAt: Type.Optional(Timestamp),
    finishedAt: Type.Optional(Timestamp),
    rollbackOf: Type.Optional(Type.String()),
    sourceId: Type.Optional(Type.String()),
    failureReason: Type.Optional(Type.String()),
    buildOutput: Type.Optional(Type.String()),
  },
  { title: 'deploy' },
);

export function deployBody(d: DeployRow, opts: { withOutput?: boolean } = {}) {
  return {
    id: d.id,
    status: d.status,
    trigger: d.trigger,
    ...(d.commitId ? { commit: { id: d.commitId, ...(d.commitMessage ? { message: d.commitMessage } : {}) } } : {}),
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
    ...(d.startedAt ? { startedAt: d.startedAt.toISOString() } : {}),
    ...(d.finishedAt ? { finishedAt: d.finishedAt.toISOString() } : {}),
    ...(d.artifactOf && d.trigger === 'rollback' ? { rollbackOf: d.artifactOf } : {}),
    ...(d.sourceId ? { sourceId: d.sourceId } : {}),
    ...(d.failureReason ? { failureReason: d.failureReason } : {}),
    ...(opts.withOutput && d.buildOutput ? { buildOutput: d.buildOutput } : {}),
  };
}
