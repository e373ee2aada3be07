import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { Link, useLocation } from 'wouter';
import { api, items, ok } from '../api';
import { ActionForm, Empty, ErrorText, StatusBadge } from '../components/bits';
import { ago } from '../lib/format';
import { useWorkspace } from '../session';

const PLANS = ['free', 'starter', 'standard', 'pro'] as const;

/** Postgres and key-value datastores of the workspace, and a form to create one. */
export function Datastores() {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const [form, setForm] = useState({
    kind: 'postgres' as 'postgres' | 'key-value',
    name: '',
    plan: 'free' as (typeof PLANS)[number],
  });
  const query = { params: { query: { ownerId: [workspace.id], limit: 100 } } };
  const postgres = useQuery({
    queryKey: ['postgres', workspace.id],
    queryFn: async () => items(await ok(api.GET('/v1/postgres', query)), 'postgres'),
  });
  const keyValue = useQuery({
    queryKey: ['key-value', workspace.id],
    queryFn: async () => items(await ok(api.GET('/v1/key-value', query)), 'keyValue'),
  });
  const create = useMutation({
    mutationFn: async () => {
      const body = { name: form.name, ownerId: workspace.id, plan: form.plan };
      const made =
        form.kind === 'postgres'
          ? await ok(api.POST('/v1/postgres', { body }))
          : await ok(api.POST('/v1/key-value', { body }));
      return made.id;
    },
    onSuccess: (id) => {
      void queryClient.invalidateQueries({ queryKey: [form.kind] });
      navigate(`/${form.kind}/${id}`);
    },
  });
  const rows = [
    ...(postgres.data ?? []).map((d) => ({ ...d, kind: 'postgres' as const })),
    ...(keyValue.data ?? []).map((d) => ({ ...d, kind: 'key-value' as const })),
  ];
  return (
    <>
      <h1>Datastores</h1>
      <ErrorText error={postgres.error ?? keyValue.error} />
      {rows.length === 0 && !postgres.isPending && !keyValue.isPending ? (
        <Empty>No datastores yet.</Empty>
      ) : (
        <div className="table-wrap">
          <table aria-label="Datastores">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Kind</th>
                <th scope="col">Status</th>
                <th scope="col">Plan</th>
                <th scope="col">Created</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((d) => (
                <tr key={d.id}>
                  <td>
                    <Link href={`/${d.kind}/${d.id}`}>{d.name}</Link>
                  </td>
                  <td>{d.kind === 'postgres' ? 'Postgres' : 'Key value'}</td>
                  <td>
                    <StatusBadge status={d.status} />
                  </td>
                  <td>{d.plan}</td>
                  <td>{ago(d.createdAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {workspace.can('developer') && (
        <>
          <h2>New datastore</h2>
          <ActionForm className="row wrap" onSubmit={() => create.mutate()}>
            <label>
              Kind
              <select
                value={form.kind}
                onChange={(e) => setForm({ ...form, kind: e.target.value as typeof form.kind })}
              >
                <option value="postgres">Postgres</option>
                <option value="key-value">Key value</option>
              </select>
            </label>
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
              Plan
              <select
                value={form.plan}
                onChange={(e) => setForm({ ...form, plan: e.target.value as typeof form.plan })}
              >
                {PLANS.map((p) => (
                  <option key={p}>{p}</option>
                ))}
              </select>
            </label>
            <button className="primary" disabled={create.isPending}>
              {create.isPending ? 'Creating…' : 'Create'}
            </button>
          </ActionForm>
          <ErrorText error={create.error} />
        </>
      )}
    </>
  );
}
