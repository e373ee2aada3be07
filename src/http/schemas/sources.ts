import { Type } from '@sinclair/typebox';
import type { DeployRow, SourceRow } from '../../store/repos/deploys.js';
import { Timestamp } from './common.js';

/** An uploaded source archive, and the deploy it started when the service deploys new sources. */
export const SourceBody = Type.Object(
  {
    id: Type.String(),
    sha256: Type.String(),
    sizeBytes: Type.Integer(),
    createdAt: Timestamp,
    deployId: Type.Optional(Type.String()),
  },
  { title: 'source' },
);
export const sourceBody = (source: SourceRow, deploy: DeployRow | undefined) => ({
  id: source.id,
  sha256: source.sha256,
  sizeBytes: source.sizeBytes,
  createdAt: source.createdAt.toISOString(),
  ...(deploy ? { deployId: deploy.id } : {}),
});
