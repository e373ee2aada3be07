import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../api';
import { ActionForm, ConfirmButton, CopyButton, ErrorText } from '../components/bits';
import { ago } from '../lib/format';
import { useWorkspace } from '../session';

/** API keys of the workspace: a new key's token is shown once, here, and never again. */
export function ApiKeys() {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [name, setName] = useState('');
  const [token, setToken] = useState<string | null>(null);
  const ownerId = workspace.id;
  const keys = useQuery({
    queryKey: ['api-keys', ownerId],
    queryFn: async () =>
      items(await ok(api.GET('/v1/api-keys', { params: { query: { ownerId, limit: 100 } } })), 'apiKey'),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: ['api-keys', ownerId] });
  const create = useMutation({
    mutationFn: () => ok(api.POST('/v1/api-keys', { body: { name, ownerId } })),
    onSuccess: (made) => {
      setToken(made.token);
      setName('');
      void done();
    },
  });
  const revoke = useMutation({
    mutationFn: (apiKeyId: string) => ok(api.DELETE('/v1/api-keys/{apiKeyId}', { params: { path: { apiKeyId } } })),
    onSuccess: () => done(),
  });
  return (
    <>
      <h1>API keys</h1>
      <ErrorText error={keys.error ?? revoke.error} />
      {token && (
        <div role="status" className="card">
          <p>Your new key. Copy it now: it is not shown again.</p>
          <code className="break" data-testid="new-token">
            {token}
          </code>{' '}
          <CopyButton text={token} />
        </div>
      )}
      {workspace.can('admin') && (
        <ActionForm className="row wrap" onSubmit={() => create.mutate()}>
          <label>
            Name
            <input required maxLength={100} value={name} onChange={(e) => setName(e.target.value)} />
          </label>
          <button className="primary" disabled={create.isPending}>
            Create key
          </button>
        </ActionForm>
      )}
      <ErrorText error={create.error} />
      <ul className="list" aria-label="API keys">
        {(keys.data ?? []).map((k) => (
          <li key={k.id}>
            <strong>{k.name}</strong>
            <span className="muted">
              created {ago(k.createdAt)}
              {k.lastUsedAt ? `, last used ${ago(k.lastUsedAt)}` : ', never used'}
            </span>
            {workspace.can('admin') && (
              <ConfirmButton
                label="Revoke"
                danger
                question={`Revoke ${k.name}? Anything using it stops working at once.`}
                onConfirm={() => revoke.mutate(k.id)}
              />
            )}
          </li>
        ))}
        {keys.data?.length === 0 && <li className="muted">No API keys.</li>}
      </ul>
    </>
  );
}
