import path from 'node:path';

/** Where a service's files live under the data dir: sources, immutable artifacts, instance dirs. */
export function createLayout(dataDir: string) {
  const serviceDir = (serviceId: string) => path.join(dataDir, 'services', serviceId);
  return {
    serviceDir,
    sourceFile: (serviceId: string, sourceId: string) => path.join(serviceDir(serviceId), 'sources', `${sourceId}.archive`),
    /** A deploy's build output, kept read-only for rollback. */
    artifactDir: (serviceId: string, deployId: string) => path.join(serviceDir(serviceId), 'artifacts', deployId),
    instanceDir: (serviceId: string, instanceId: string) => path.join(serviceDir(serviceId), 'instances', instanceId),
    uploadTmp: (serviceId: string) => path.join(serviceDir(serviceId), 'sources', '.incoming'),
  };
}
export type Layout = ReturnType<typeof createLayout>;
