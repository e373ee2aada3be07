import { Type } from '@sinclair/typebox';
import type { EnvironmentView, ProjectView } from '../../core/projects.js';
import { OwnerBody, ownerBody } from './bodies.js';
import { PROTECTED_STATUSES } from '../../model/enums.js';
import { literalUnion, Timestamp } from './common.js';

export const ProtectedStatus = literalUnion(PROTECTED_STATUSES, {
  description: 'Only admins perform destructive actions in a protected environment',
});
export const IpAllowList = Type.Array(
  Type.Object({ cidrBlock: Type.String({ maxLength: 64 }), description: Type.String({ maxLength: 200 }) }),
  { maxItems: 100, description: 'Stored for the environment; Slipway does not filter traffic by it yet' },
);

export const ProjectBody = Type.Object(
  {
    id: Type.String(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    name: Type.String(),
    owner: OwnerBody,
    environmentIds: Type.Array(Type.String()),
  },
  { title: 'project' },
);
export const projectBody = ({ project, environmentIds, owner }: ProjectView) => ({
  id: project.id,
  createdAt: project.createdAt.toISOString(),
  updatedAt: project.updatedAt.toISOString(),
  name: project.name,
  owner: ownerBody(owner),
  environmentIds,
});

export const EnvironmentBody = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    projectId: Type.String(),
    databasesIds: Type.Array(Type.String()),
    redisIds: Type.Array(Type.String()),
    serviceIds: Type.Array(Type.String()),
    envGroupIds: Type.Array(Type.String()),
    protectedStatus: ProtectedStatus,
    networkIsolationEnabled: Type.Boolean(),
    ipAllowList: IpAllowList,
  },
  { title: 'environment' },
);
/** Render's `environment`, with the ids of what it holds. */
export const environmentBody = ({ environment: e, held }: EnvironmentView) => ({
  id: e.id,
  name: e.name,
  projectId: e.projectId,
  databasesIds: held.postgresIds,
  redisIds: held.keyValueIds,
  serviceIds: held.serviceIds,
  envGroupIds: held.envGroupIds,
  protectedStatus: e.protectedStatus,
  networkIsolationEnabled: e.networkIsolationEnabled,
  ipAllowList: e.ipAllowList,
});
