import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { useLocation } from 'wouter';
import { api, ok } from '../api';
import { ActionForm, ErrorText, StatusBadge } from '../components/bits';
import { ago, bytes } from '../lib/format';
import { useWorkspace } from '../session';

type Kind = 'postgres' | 'key-value';

const listExports = (kind: Kind, id: string) =>
  kind === 'postgres'
    ? ok(api.GET('/v1/postgres/{postgresId}/export', { params: { path: { postgresId: id } } }))
    : ok(api.GET('/v1/key-value/{keyValueId}/export', { params: { path: { keyValueId: id } } }));

/** Exports (a dump to download, kept 7 days) and, for Postgres, point-in-time recovery into a new datastore. */
export function DatastoreBackups({ kind, id }: { kind: Kind; id: string }) {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const exports = useQuery({
    queryKey: [kind, 'exports', id],
    queryFn: () => listExports(kind, id),
    refetchInterval: (q) => (q.state.data?.some((e) => e.status === 'running') ? 2000 : 30_000),
  });
  const start = useMutation({
    mutationFn: () =>
      kind === 'postgres'
        ? ok(api.POST('/v1/postgres/{postgresId}/export', { params: { path: { postgresId: id } } }))
        : ok(api.POST('/v1/key-value/{keyValueId}/export', { params: { path: { keyValueId: id } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: [kind, 'exports', id] }),
  });
  const canAct = workspace.can('developer');
  return (
    <>
      <h2>Exports</h2>
      <ErrorText error={exports.error ?? start.error} />
      {canAct && (
        <button type="button" disabled={start.isPending} onClick={() => start.mutate()}>
          Export now
        </button>
      )}
      <ul className="list" aria-label="Exports">
        {(exports.data ?? []).map((e) => (
          <li key={e.id}>
            <StatusBadge status={e.status} /> <span className="muted">{ago(e.createdAt)}</span>
            {e.sizeBytes !== undefined && <span className="muted">{bytes(e.sizeBytes)}</span>}
            {e.url && canAct && <a href={new URL(e.url).pathname}>Download</a>}
            {e.error && <span className="error small-text">{e.error}</span>}
          </li>
        ))}
        {exports.data?.length === 0 && <li className="muted">No exports in the last 7 days.</li>}
      </ul>
      {kind === 'postgres' && (
        <Recovery id={id} canAct={canAct} onRecovered={(newId) => navigate(`/postgres/${newId}`)} />
      )}
    </>
  );
}

function Recovery({ id, canAct, onRecovered }: { id: string; canAct: boolean; onRecovered: (id: string) => void }) {
  const [at, setAt] = useState('');
  const info = useQuery({
    queryKey: ['postgres', 'recovery', id],
    queryFn: () => ok(api.GET('/v1/postgres/{postgresId}/recovery', { params: { path: { postgresId: id } } })),
  });
  const recover = useMutation({
    mutationFn: () =>
      ok(
        api.POST('/v1/postgres/{postgresId}/recovery', {
          params: { path: { postgresId: id } },
          body: { restoreTime: new Date(at).toISOString() },
        }),
      ),
    onSuccess: (created) => onRecovered(created.id),
  });
  const r = info.data;
  return (
    <>
      <h2>Point-in-time recovery</h2>
      <ErrorText error={info.error ?? recover.error} />
      {r?.recoveryStatus === 'AVAILABLE' ? (
        <>
          <p className="muted">
            Restorable from {new Date(r.startsAt!).toLocaleString()} to now, into a new datastore (this one is
            untouched).
          </p>
          {canAct && (
            <ActionForm className="row wrap" onSubmit={() => recover.mutate()}>
              <label>
                Restore to
                <input type="datetime-local" step={1} required value={at} onChange={(e) => setAt(e.target.value)} />
              </label>
              <button disabled={recover.isPending}>Restore into a new datastore</button>
            </ActionForm>
          )}
        </>
      ) : (
        r && (
          <p className="muted">
            {r.recoveryStatus === 'BACKUP_NOT_READY'
              ? 'Not yet: the first base backup is still being taken.'
              : 'Not available on this plan (or on this Slipway: pgBackRest is not installed).'}
          </p>
        )
      )}
    </>
  );
}
