import path from 'node:path';
import type { DeployRow } from '../../store/repos/deploys.js';

/** Where a service's files live under the data dir: sources, immutable artifacts, instance dirs. */
export function createLayout(dataDir: string) {
  const servicesDir = path.join(dataDir, 'services');
  const serviceDir = (serviceId: string) => path.join(servicesDir, serviceId);
  return {
    servicesDir,
    serviceDir,
    sourceFile: (serviceId: string, sourceId: string) =>
      path.join(serviceDir(serviceId), 'sources', `${sourceId}.archive`),
    /** A deploy's build output, kept read-only for rollback. */
    artifactDir: (serviceId: string, deployId: string) => path.join(serviceDir(serviceId), 'artifacts', deployId),
    instanceDir: (serviceId: string, instanceId: string) => path.join(serviceDir(serviceId), 'instances', instanceId),
    /** Uploads being received and checked; whatever is here when Slipway starts is a crash's leftover. */
    uploadTmp: (serviceId: string) => path.join(serviceDir(serviceId), 'sources', '.incoming'),
  };
}
export type Layout = ReturnType<typeof createLayout>;

/** The deploy whose artifact `deploy` runs: its own, or the one a redeploy or rollback reuses. */
export const artifactOwner = (deploy: Pick<DeployRow, 'id' | 'artifactOf'>) => deploy.artifactOf ?? deploy.id;
