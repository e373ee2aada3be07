import { Type } from '@sinclair/typebox';
import { refValue, type Datastores } from '../../core/datastores/datastores.js';
import { KEY_VALUE_PLANS, MAXMEMORY_POLICIES, POSTGRES_PLANS } from '../../core/datastores/plans.js';
import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { WorkspaceRow } from '../../store/repos/workspaces.js';
import type { ProjectView } from '../../core/projects.js';
import { OwnerBody, ownerBody } from './bodies.js';
import { ProjectBody, projectBody } from './projects.js';
import { literalUnion, ManagedBy, Name, Timestamp } from './common.js';

const IpAllowList = Type.Array(
  Type.Object({
    cidrBlock: Type.String({ minLength: 1, maxLength: 64 }),
    description: Type.String({ maxLength: 200 }),
  }),
  { maxItems: 100 },
);
const Identifier = Type.String({ minLength: 1, maxLength: 63 });
const EnvironmentId = Type.Optional(Type.String({ maxLength: 64 }));
const OwnerId = Type.Optional(
  Type.String({ maxLength: 64, description: 'Workspace (tea-…); default: your default workspace' }),
);
export const MaxmemoryPolicy = literalUnion(MAXMEMORY_POLICIES);

/** Render's postgresPOSTInput (ownerId optional: your default workspace; version optional: the newest available). */
export const PostgresPOST = Type.Object(
  {
    name: Name,
    ownerId: OwnerId,
    plan: literalUnion(POSTGRES_PLANS),
    version: Type.Optional(literalUnion(['11', '12', '13', '14', '15', '16', '17', '18'])),
    databaseName: Type.Optional(Identifier),
    databaseUser: Type.Optional(Identifier),
    environmentId: EnvironmentId,
    ipAllowList: Type.Optional(IpAllowList),
    region: Type.Optional(Type.String({ maxLength: 50 })),
  },
  { title: 'postgresPOSTInput' },
);
export const PostgresPATCH = Type.Object(
  {
    name: Type.Optional(Name),
    plan: Type.Optional(literalUnion(POSTGRES_PLANS)),
    ipAllowList: Type.Optional(IpAllowList),
  },
  { title: 'postgresPATCHInput' },
);
export const KeyValuePOST = Type.Object(
  {
    name: Name,
    ownerId: OwnerId,
    plan: literalUnion(KEY_VALUE_PLANS),
    maxmemoryPolicy: Type.Optional(MaxmemoryPolicy),
    environmentId: EnvironmentId,
    ipAllowList: Type.Optional(IpAllowList),
    region: Type.Optional(Type.String({ maxLength: 50 })),
  },
  { title: 'keyValuePOSTInput' },
);
export const KeyValuePATCH = Type.Object(
  {
    name: Type.Optional(Name),
    plan: Type.Optional(literalUnion(KEY_VALUE_PLANS)),
    maxmemoryPolicy: Type.Optional(MaxmemoryPolicy),
    ipAllowList: Type.Optional(IpAllowList),
  },
  { title: 'keyValuePATCHInput' },
);

const common = {
  id: Type.String(),
  name: Type.String(),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  owner: OwnerBody,
  plan: Type.String(),
  region: Type.String(),
  status: Type.String(),
  version: Type.String(),
  environmentId: Type.Optional(Type.String()),
  dashboardUrl: Type.String(),
  ipAllowList: IpAllowList,
  blueprint: ManagedBy,
};
export const PostgresBody = Type.Object(
  {
    ...common,
    databaseName: Type.String(),
    databaseUser: Type.String(),
    highAvailabilityEnabled: Type.Boolean(),
    diskAutoscalingEnabled: Type.Boolean(),
    readReplicas: Type.Array(Type.Unknown()),
    role: Type.Literal('primary'),
    project: Type.Union([ProjectBody, Type.Null()], {
      description: "The project of the database's environment (Render's postgresDetail); null outside one",
    }),
    suspended: Type.String(),
    suspenders: Type.Array(Type.String()),
  },
  { title: 'postgresDetail' },
);
const keyValueFields = { ...common, options: Type.Object({ maxmemoryPolicy: Type.Optional(Type.String()) }) };
export const KeyValueBody = Type.Object(keyValueFields, { title: 'keyValueDetail' });
/** Render's deprecated name for a key-value instance: the same fields. */
export const RedisBody = Type.Object(keyValueFields, { title: 'redisDetail' });
export const PostgresConnectionInfo = Type.Object(
  {
    password: Type.String(),
    internalConnectionString: Type.String(),
    externalConnectionString: Type.String(),
    psqlCommand: Type.String(),
  },
  { title: 'postgresConnectionInfo' },
);
export const KeyValueConnectionInfo = Type.Object(
  {
    internalConnectionString: Type.String(),
    externalConnectionString: Type.String(),
    cliCommand: Type.String(),
    keyPrefix: Type.Optional(Type.String({ description: 'On a shared server: the prefix every key must start with' })),
  },
  { title: 'keyValueConnectionInfo' },
);
export const RedisConnectionInfo = Type.Object(
  {
    internalConnectionString: Type.String(),
    externalConnectionString: Type.String(),
    redisCLICommand: Type.String(),
    keyPrefix: KeyValueConnectionInfo.properties.keyPrefix,
  },
  { title: 'redisConnectionInfo' },
);

/** Render's postgres/postgresDetail and keyValue/keyValueDetail bodies. */
export function datastoreBody(row: DatastoreRow, owner: WorkspaceRow, dashboardUrl: string, project?: ProjectView) {
  const base = {
    id: row.id,
    name: row.name,
    createdAt: row.createdAt.toISOString(),
    updatedAt: row.updatedAt.toISOString(),
    owner: ownerBody(owner),
    plan: row.plan,
    region: 'oregon',
    status: row.status,
    version: row.version,
    dashboardUrl,
    ipAllowList: row.ipAllowList,
    ...(row.environmentId ? { environmentId: row.environmentId } : {}),
  };
  if (row.kind === 'keyValue') return { ...base, options: { maxmemoryPolicy: row.maxmemoryPolicy ?? undefined } };
  return {
    ...base,
    databaseName: row.databaseName!,
    databaseUser: row.databaseUser!,
    highAvailabilityEnabled: false,
    diskAutoscalingEnabled: false,
    readReplicas: [],
    role: 'primary' as const,
    project: project ? projectBody(project) : null,
    suspended: row.suspended ? 'suspended' : 'not_suspended',
    suspenders: row.suspended ? ['user'] : [],
  };
}

/**
 * Render's connection-info for either kind: internal is what the workspace's apps use (a local server's id, on their
 * private network), external where the Slipway machine reaches it (the same on the shared network).
 */
export function connectionInfoBody(row: DatastoreRow, c: ReturnType<Datastores['connection']>) {
  const url = refValue(row.kind, c, 'connectionString');
  const external = refValue(row.kind, { ...c, ...c.external }, 'connectionString');
  if (row.kind === 'postgres') {
    return {
      password: c.password,
      internalConnectionString: url,
      externalConnectionString: external,
      psqlCommand: `PGPASSWORD=${c.password} psql -h ${c.external.host} -p ${c.external.port} -U ${c.user} ${c.database}`,
    };
  }
  return {
    internalConnectionString: url,
    externalConnectionString: external,
    cliCommand: `redis-cli -u ${external}`,
    ...(c.keyPrefix ? { keyPrefix: c.keyPrefix } : {}),
  };
}

/** Render's deprecated redisConnectionInfo: keyValueConnectionInfo with the CLI command as `redisCLICommand`. */
export function redisConnectionInfoBody(row: DatastoreRow, c: ReturnType<Datastores['connection']>) {
  const { cliCommand, ...rest } = connectionInfoBody(row, c) as { cliCommand: string };
  return { ...rest, redisCLICommand: cliCommand };
}
