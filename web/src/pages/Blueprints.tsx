import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../api';
import { ActionForm, Empty, ErrorText, StatusBadge } from '../components/bits';
import { ago } from '../lib/format';
import { useWorkspace } from '../session';

/** A blueprint's syncs, newest first. */
function Syncs({ blueprintId }: { blueprintId: string }) {
  const syncs = useQuery({
    queryKey: ['blueprint-syncs', blueprintId],
    refetchInterval: 3000,
    queryFn: async () =>
      items(
        await ok(
          api.GET('/v1/blueprints/{blueprintId}/syncs', { params: { path: { blueprintId }, query: { limit: 10 } } }),
        ),
        'sync',
      ),
  });
  return (
    <ul className="list" aria-label="Syncs">
      {(syncs.data ?? []).map((s) => (
        <li key={s.id}>
          <StatusBadge status={s.state} /> <span className="muted">{ago(s.startedAt)}</span>
          {s.error && <span className="error small-text">{s.error}</span>}
        </li>
      ))}
    </ul>
  );
}

/** render.yaml: validate one (its errors by line, or the plan of what a sync would create), and the blueprints. */
export function Blueprints() {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [yaml, setYaml] = useState('');
  const [open, setOpen] = useState<string | null>(null);
  const list = useQuery({
    queryKey: ['blueprints', workspace.id],
    queryFn: async () =>
      items(
        await ok(api.GET('/v1/blueprints', { params: { query: { ownerId: [workspace.id], limit: 100 } } })),
        'blueprint',
      ),
  });
  const validate = useMutation({
    mutationFn: () => {
      const form = new FormData();
      form.append('ownerId', workspace.id);
      form.append('file', new Blob([yaml], { type: 'application/yaml' }), 'render.yaml');
      return ok(api.POST('/v1/blueprints/validate', { body: { ownerId: workspace.id }, bodySerializer: () => form }));
    },
  });
  const sync = useMutation({
    mutationFn: (blueprintId: string) =>
      ok(api.POST('/v1/blueprints/{blueprintId}/sync', { params: { path: { blueprintId } }, body: {} })),
    onSuccess: (_d, id) => {
      setOpen(id);
      void queryClient.invalidateQueries({ queryKey: ['blueprint-syncs', id] });
    },
  });
  const result = validate.data;
  return (
    <>
      <h1>Blueprints</h1>
      <ErrorText error={list.error ?? sync.error} />
      {list.data?.length === 0 && (
        <Empty>No blueprints yet: create one from a repository with the API or the CLI.</Empty>
      )}
      {(list.data ?? []).map((b) => (
        <article key={b.id} className="card">
          <div className="row wrap">
            <h2 className="inline-heading">{b.name}</h2>
            <StatusBadge status={b.status} />
            <span className="muted">{b.repo ?? 'uploaded'}</span>
            <span className="spacer" />
            {workspace.can('developer') && (
              <button type="button" className="small" disabled={sync.isPending} onClick={() => sync.mutate(b.id)}>
                Sync now
              </button>
            )}
            <button
              type="button"
              className="small"
              aria-expanded={open === b.id}
              onClick={() => setOpen(open === b.id ? null : b.id)}
            >
              History
            </button>
          </div>
          {open === b.id && <Syncs blueprintId={b.id} />}
        </article>
      ))}
      {workspace.can('developer') && (
        <>
          <h2>Validate a render.yaml</h2>
          <ActionForm className="stack wide" onSubmit={() => validate.mutate()}>
            <label>
              render.yaml
              <textarea rows={10} spellCheck={false} value={yaml} onChange={(e) => setYaml(e.target.value)} required />
            </label>
            <button disabled={validate.isPending}>Validate</button>
          </ActionForm>
          <ErrorText error={validate.error} />
          {result && (
            <div role="status" className="card">
              {result.valid ? (
                <>
                  <p>
                    <StatusBadge status="valid" /> A sync would create or update:
                  </p>
                  <ul>
                    {result.plan?.services.map((s) => (
                      <li key={`s-${s}`}>service {s}</li>
                    ))}
                    {result.plan?.databases.map((s) => (
                      <li key={`d-${s}`}>Postgres {s}</li>
                    ))}
                    {result.plan?.keyValue.map((s) => (
                      <li key={`k-${s}`}>key value {s}</li>
                    ))}
                    {result.plan?.envGroups.map((s) => (
                      <li key={`e-${s}`}>env group {s}</li>
                    ))}
                  </ul>
                  {result.plan?.warnings.map((w, i) => (
                    <p key={i} className="muted">
                      {w.resource}: {w.warning}
                    </p>
                  ))}
                </>
              ) : (
                <ul>
                  {result.errors?.map((e, i) => (
                    <li key={i} className="error">
                      {'line' in e && e.line ? `line ${String(e.line)}: ` : ''}
                      {e.error}
                    </li>
                  ))}
                </ul>
              )}
            </div>
          )}
        </>
      )}
    </>
  );
}
