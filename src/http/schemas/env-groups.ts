import { Type } from '@sinclair/typebox';
import type { EnvGroupMetaView, EnvGroupView } from '../../core/env-groups.js';
import { ManagedBy, Timestamp } from './common.js';
import { SecretFileBody } from './secret-files.js';
import { EnvVarBody } from './services.js';

/** Render's serviceTypeShort, used in an env group's serviceLinks. */
const SHORT_TYPE = {
  web_service: 'web',
  private_service: 'pserv',
  background_worker: 'worker',
  cron_job: 'cron',
  static_site: 'static',
} as const;

const Meta = {
  id: Type.String(),
  name: Type.String(),
  ownerId: Type.String(),
  environmentId: Type.Optional(Type.String()),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  serviceLinks: Type.Array(Type.Object({ id: Type.String(), name: Type.String(), type: Type.String() })),
  blueprint: ManagedBy,
};
export const EnvGroupMeta = Type.Object(Meta, { title: 'envGroupMeta' });
export const EnvGroupBody = Type.Object(
  { ...Meta, envVars: Type.Array(EnvVarBody), secretFiles: Type.Array(SecretFileBody) },
  { title: 'envGroup' },
);

/** Render's envGroupMeta: the group and its linked services. */
export const envGroupMetaBody = ({ group, serviceLinks }: EnvGroupMetaView) => ({
  id: group.id,
  name: group.name,
  ownerId: group.workspaceId,
  ...(group.environmentId ? { environmentId: group.environmentId } : {}),
  createdAt: group.createdAt.toISOString(),
  updatedAt: group.updatedAt.toISOString(),
  serviceLinks: serviceLinks.map((l) => ({ ...l, type: SHORT_TYPE[l.type] })),
});

/** Render's envGroup: envGroupMeta with the (opened or masked) variables and secret files. */
export const envGroupBody = (view: EnvGroupView) => ({
  ...envGroupMetaBody(view),
  envVars: view.envVars,
  secretFiles: view.secretFiles,
});
