import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { paths } from '../../../openapi/schema';
import { api, ok } from '../api';
import { ActionForm, ConfirmButton, Empty, ErrorText } from '../components/bits';
import { ago } from '../lib/format';
import { useWorkspace } from '../session';

type Registry = paths['/v1/registrycredentials']['post']['requestBody']['content']['application/json']['registry'];
const REGISTRIES = ['DOCKER', 'GITHUB', 'GITLAB', 'GOOGLE_ARTIFACT', 'AWS_ECR'] as const satisfies Registry[];

/** Registry credentials for image services: the token is sent once and never shown again. */
export function RegistryCredentials() {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [form, setForm] = useState({ name: '', registry: 'DOCKER' as Registry, username: '', authToken: '' });
  const list = useQuery({
    queryKey: ['registry-credentials', workspace.id],
    queryFn: () =>
      ok(api.GET('/v1/registrycredentials', { params: { query: { ownerId: [workspace.id], limit: 100 } } })),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: ['registry-credentials', workspace.id] });
  const create = useMutation({
    mutationFn: () => ok(api.POST('/v1/registrycredentials', { body: { ...form, ownerId: workspace.id } })),
    onSuccess: () => {
      setForm({ ...form, name: '', username: '', authToken: '' });
      void done();
    },
  });
  const remove = useMutation({
    mutationFn: (registryCredentialId: string) =>
      ok(api.DELETE('/v1/registrycredentials/{registryCredentialId}', { params: { path: { registryCredentialId } } })),
    onSuccess: () => done(),
  });
  const set = (key: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm({ ...form, [key]: e.target.value });
  return (
    <>
      <h1>Registry credentials</h1>
      <ErrorText error={list.error ?? remove.error} />
      {list.data?.length === 0 && <Empty>No registry credentials.</Empty>}
      <ul className="list" aria-label="Registry credentials">
        {(list.data ?? []).map((c) => (
          <li key={c.id}>
            <strong>{c.name}</strong>
            <span className="muted">
              {c.registry}, {c.username}, updated {ago(c.updatedAt)}
            </span>
            {workspace.can('developer') && (
              <ConfirmButton
                label="Delete"
                danger
                question={`Delete ${c.name}? A credential a service uses cannot be deleted.`}
                onConfirm={() => remove.mutate(c.id)}
              />
            )}
          </li>
        ))}
      </ul>
      {workspace.can('developer') && (
        <>
          <h2>New credential</h2>
          <ActionForm className="row wrap" onSubmit={() => create.mutate()}>
            <label>
              Name
              <input required maxLength={100} value={form.name} onChange={set('name')} />
            </label>
            <label>
              Registry
              <select value={form.registry} onChange={set('registry')}>
                {REGISTRIES.map((r) => (
                  <option key={r}>{r}</option>
                ))}
              </select>
            </label>
            <label>
              Username
              <input required value={form.username} onChange={set('username')} autoComplete="off" />
            </label>
            <label>
              Token
              <input type="password" required value={form.authToken} onChange={set('authToken')} autoComplete="off" />
            </label>
            <button className="primary" disabled={create.isPending}>
              Save credential
            </button>
          </ActionForm>
          <ErrorText error={create.error} />
        </>
      )}
    </>
  );
}
