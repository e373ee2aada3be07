import { conflict, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { SecretBox } from '../lib/secret-box.js';
import { isUniqueViolation } from '../store/db.js';
import type { EnvGroupQuery, EnvGroupRepo, EnvGroupRow } from '../store/repos/env-groups.js';
import type { Repos, Transact } from '../store/repos/index.js';
import type { SecretFile, SecretFiles } from './secret-files.js';
import type { EnvLayer } from './service-state/env.js';
import { createEnvVars, type EnvVarInput, type EnvVars, type RefPort } from './services/env-vars.js';
import { MASKED_VALUE } from './services/env-view.js';

export interface EnvGroupMetaView {
  group: EnvGroupRow;
  /** In link order. */
  serviceLinks: Awaited<ReturnType<EnvGroupRepo['linkedServices']>>;
}
export interface EnvGroupView extends EnvGroupMetaView {
  envVars: Awaited<ReturnType<EnvVars['list']>>;
  secretFiles: SecretFile[];
}

/**
 * Env groups: named sets of variables (sealed at rest) linked to services. A service sees
 * platform < its groups in link order < its own variables.
 */
export function createEnvGroups(deps: {
  repos: Pick<Repos, 'envGroups' | 'envGroupVars' | 'envVars' | 'services'>;
  transact: Transact;
  box: SecretBox;
  refs: RefPort;
  /** 404 unless the environment is in the workspace (core/projects.ts). */
  assertEnvironment: (workspaceId: string, environmentId: string) => Promise<void>;
  /** The groups' secret files (core/secret-files.ts): shown and masked as their variables are. */
  files: SecretFiles['group'];
}) {
  const { repos, transact, box, refs, files } = deps;
  const groupVars = createEnvVars({ repo: repos.envGroupVars, box, refs });
  const serviceVars = createEnvVars({ repo: repos.envVars, box, refs });

  async function get(id: string): Promise<EnvGroupRow> {
    const group = await repos.envGroups.get(id);
    if (!group) throw notFound('env group');
    return group;
  }
  /** A service of the group's workspace, else 404 (never another workspace's). */
  async function serviceIn(workspaceId: string, serviceId: string) {
    const service = await repos.services.get(serviceId);
    if (!service || service.workspaceId !== workspaceId) throw notFound(`service ${serviceId}`);
    return service;
  }
  async function changed(group: EnvGroupRow, change: () => Promise<unknown>): Promise<EnvGroupRow> {
    await change();
    return (await repos.envGroups.update(group.id, {})) ?? group;
  }
  const named =
    <T>(name: string) =>
    (err: unknown): T => {
      throw isUniqueViolation(err) ? conflict(`an env group named "${name}" already exists in this workspace`) : err;
    };

  /** `reveal` false: the values masked, the keys and references shown (principal.ts readsSecrets). */
  const masked = <T extends { value: string }>(v: T, reveal: boolean): T =>
    reveal ? v : { ...v, value: MASKED_VALUE };
  const maskedFile = (f: SecretFile, reveal: boolean): SecretFile => (reveal ? f : { ...f, content: MASKED_VALUE });
  /** The group with its linked services, in link order (Render's envGroupMeta, unserialized). */
  const metaView = async (group: EnvGroupRow): Promise<EnvGroupMetaView> => ({
    group,
    serviceLinks: await repos.envGroups.linkedServices(group.id),
  });

  return {
    get,
    list: (q: EnvGroupQuery) => repos.envGroups.list(q),
    async create(
      workspaceId: string,
      input: { name: string; envVars: EnvVarInput[]; serviceIds?: string[]; environmentId?: string },
    ) {
      for (const id of input.serviceIds ?? []) await serviceIn(workspaceId, id);
      if (input.environmentId) await deps.assertEnvironment(workspaceId, input.environmentId);
      const vars = await groupVars.prepare(workspaceId, input.envVars);
      return transact(async (tx) => {
        const group = await tx.envGroups
          .insert({ id: newId('envGroup'), workspaceId, name: input.name, environmentId: input.environmentId ?? null })
          .catch(named<EnvGroupRow>(input.name));
        await groupVars.write(group.id, vars, tx.envGroupVars);
        for (const serviceId of input.serviceIds ?? []) await tx.envGroups.link(group.id, serviceId);
        return group;
      });
    },
    rename: async (group: EnvGroupRow, name: string) =>
      (await repos.envGroups.update(group.id, { name }).catch(named<undefined>(name)))!,
    remove: (group: EnvGroupRow) => repos.envGroups.delete(group.id),
    getVar: async (group: EnvGroupRow, key: string, reveal: boolean) =>
      masked(await groupVars.get(group.id, key), reveal),
    // Every change to a group's variables or links bumps its updatedAt; each returns the group as it is now.
    replaceVars: (group: EnvGroupRow, inputs: EnvVarInput[]) => changed(group, () => groupVars.replace(group, inputs)),
    putVar: (group: EnvGroupRow, input: EnvVarInput) => changed(group, () => groupVars.put(group, input)),
    deleteVar: (group: EnvGroupRow, key: string) => changed(group, () => groupVars.delete(group.id, key)),
    getFile: async (group: EnvGroupRow, name: string, reveal: boolean) =>
      maskedFile(await files.get(group.id, name), reveal),
    putFile: (group: EnvGroupRow, file: SecretFile) => changed(group, () => files.put(group.id, file)),
    deleteFile: (group: EnvGroupRow, name: string) => changed(group, () => files.delete(group.id, name)),
    link: (group: EnvGroupRow, serviceId: string) =>
      changed(group, async () => repos.envGroups.link(group.id, (await serviceIn(group.workspaceId, serviceId)).id)),
    unlink: (group: EnvGroupRow, serviceId: string) =>
      changed(group, async () => {
        if (!(await repos.envGroups.unlink(group.id, serviceId))) throw notFound(`link to service ${serviceId}`);
      }),
    metaView,
    /** The group with its linked services and its variables, opened or masked (Render's envGroup, unserialized). */
    view: async (group: EnvGroupRow, reveal: boolean): Promise<EnvGroupView> => ({
      ...(await metaView(group)),
      envVars: (await groupVars.list(group.id)).map((v) => masked(v, reveal)),
      secretFiles: (await files.list(group.id)).map((f) => maskedFile(f, reveal)),
    }),
    /** A service's variables below the platform's: its groups in link order, then its own. */
    async layersOf(serviceId: string): Promise<EnvLayer[]> {
      const groups = await repos.envGroups.groupsOf(serviceId);
      const layers: EnvLayer[] = [];
      for (const group of groups)
        layers.push({ source: `envGroup:${group.id}`, vars: await groupVars.list(group.id, true) });
      layers.push({ source: 'service', vars: await serviceVars.list(serviceId, true) });
      return layers;
    },
  };
}
export type EnvGroups = ReturnType<typeof createEnvGroups>;
