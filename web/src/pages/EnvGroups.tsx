import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok } from '../api';
import { ActionForm, ConfirmButton, Empty, ErrorText } from '../components/bits';
import { parseDotenv } from '../lib/dotenv';
import { useWorkspace } from '../session';

/** Env groups: variables shared by the services linked to them (linked from a service's Environment tab). */
export function EnvGroups() {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [form, setForm] = useState({ name: '', vars: '' });
  const groups = useQuery({
    queryKey: ['env-groups', workspace.id],
    queryFn: () => ok(api.GET('/v1/env-groups', { params: { query: { ownerId: [workspace.id], limit: 100 } } })),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: ['env-groups', workspace.id] });
  const create = useMutation({
    mutationFn: () =>
      ok(
        api.POST('/v1/env-groups', {
          body: {
            name: form.name,
            ownerId: workspace.id,
            envVars: parseDotenv(form.vars).pairs.map(([key, value]) => ({ key, value })),
          },
        }),
      ),
    onSuccess: () => {
      setForm({ name: '', vars: '' });
      void done();
    },
  });
  const remove = useMutation({
    mutationFn: (envGroupId: string) =>
      ok(api.DELETE('/v1/env-groups/{envGroupId}', { params: { path: { envGroupId } } })),
    onSuccess: () => done(),
  });
  return (
    <>
      <h1>Env groups</h1>
      <ErrorText error={groups.error ?? remove.error} />
      {groups.data?.length === 0 && <Empty>No env groups yet.</Empty>}
      <ul className="list" aria-label="Env groups">
        {(groups.data ?? []).map((g) => (
          <li key={g.id}>
            <strong>{g.name}</strong>
            <span className="muted">
              linked to {g.serviceLinks.length ? g.serviceLinks.map((s) => s.name).join(', ') : 'no service'}
            </span>
            {workspace.can('developer') && (
              <ConfirmButton
                label="Delete"
                danger
                question={`Delete ${g.name}? Its services lose its variables at their next deploy.`}
                onConfirm={() => remove.mutate(g.id)}
              />
            )}
          </li>
        ))}
      </ul>
      {workspace.can('developer') && (
        <>
          <h2>New env group</h2>
          <ActionForm className="stack wide" onSubmit={() => create.mutate()}>
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
              Variables (.env text)
              <textarea
                rows={5}
                spellCheck={false}
                value={form.vars}
                onChange={(e) => setForm({ ...form, vars: e.target.value })}
              />
            </label>
            <ErrorText error={create.error} />
            <button className="primary" disabled={create.isPending}>
              Create env group
            </button>
          </ActionForm>
        </>
      )}
    </>
  );
}
