import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../api';
import { ActionForm, Empty, ErrorText } from '../components/bits';
import { useWorkspace } from '../session';

/** Projects and their environments (Render's grouping of services, datastores and env groups). */
export function Projects() {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [form, setForm] = useState({ name: '', environments: 'production, staging' });
  const projects = useQuery({
    queryKey: ['projects', workspace.id],
    queryFn: async () =>
      items(
        await ok(api.GET('/v1/projects', { params: { query: { ownerId: [workspace.id], limit: 100 } } })),
        'project',
      ),
  });
  const environments = useQuery({
    queryKey: ['environments', workspace.id, projects.data?.map((p) => p.id).join()],
    enabled: (projects.data?.length ?? 0) > 0,
    queryFn: async () =>
      items(
        await ok(
          api.GET('/v1/environments', {
            params: { query: { projectId: projects.data!.map((p) => p.id), limit: 100 } },
          }),
        ),
        'environment',
      ),
  });
  const create = useMutation({
    mutationFn: () =>
      ok(
        api.POST('/v1/projects', {
          body: {
            name: form.name,
            ownerId: workspace.id,
            environments: form.environments
              .split(',')
              .map((name) => name.trim())
              .filter(Boolean)
              .map((name) => ({ name })),
          },
        }),
      ),
    onSuccess: () => {
      setForm({ ...form, name: '' });
      void queryClient.invalidateQueries({ queryKey: ['projects', workspace.id] });
    },
  });
  return (
    <>
      <h1>Projects</h1>
      <ErrorText error={projects.error ?? environments.error} />
      {projects.data?.length === 0 && <Empty>No projects yet.</Empty>}
      {(projects.data ?? []).map((p) => (
        <article key={p.id} className="card">
          <h2 className="inline-heading">{p.name}</h2>
          <ul className="list" aria-label={`Environments of ${p.name}`}>
            {(environments.data ?? [])
              .filter((e) => e.projectId === p.id)
              .map((e) => (
                <li key={e.id}>
                  <strong>{e.name}</strong>
                  <span className="muted">
                    {e.serviceIds.length} services, {e.databasesIds.length + e.redisIds.length} datastores,{' '}
                    {e.envGroupIds.length} env groups
                  </span>
                </li>
              ))}
          </ul>
        </article>
      ))}
      {workspace.can('developer') && (
        <>
          <h2>New project</h2>
          <ActionForm className="row wrap" onSubmit={() => create.mutate()}>
            <label>
              Name
              <input
                required
                maxLength={100}
                value={form.name}
                onChange={(e) => setForm({ ...form, name: e.target.value })}
              />
            </label>
            <label>
              Environments (comma-separated)
              <input value={form.environments} onChange={(e) => setForm({ ...form, environments: e.target.value })} />
            </label>
            <button className="primary" disabled={create.isPending}>
              Create project
            </button>
          </ActionForm>
          <ErrorText error={create.error} />
        </>
      )}
    </>
  );
}
