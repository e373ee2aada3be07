import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { HttpDeps } from '../deps.js';
import { datastoreBody } from '../schemas/datastores.js';

/**
 * Render's body of either kind, with its owner (and a Postgres database's project). `owners` and `projectsOf` memoize
 * the lookups of one response: a page of a workspace's datastores asks for its workspace once, not once a row.
 */
export async function renderDatastore(
  { workspaces, projects, config }: Pick<HttpDeps, 'workspaces' | 'projects' | 'config'>,
  row: DatastoreRow,
  owners = new Map<string, ReturnType<typeof workspaces.get>>(),
  projectsOf = new Map<string, ReturnType<typeof projects.projectOfEnvironment>>(),
) {
  if (!owners.has(row.workspaceId)) owners.set(row.workspaceId, workspaces.get(row.workspaceId));
  const env = row.kind === 'postgres' ? row.environmentId : null; // only Postgres bodies name their project
  if (env && !projectsOf.has(env)) projectsOf.set(env, projects.projectOfEnvironment(env));
  return datastoreBody(
    row,
    await owners.get(row.workspaceId)!,
    `${config.publicUrl}/${row.kind === 'postgres' ? 'postgres' : 'key-value'}/${row.id}`,
    env ? await projectsOf.get(env) : undefined,
  );
}
