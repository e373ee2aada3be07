import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useLocation } from 'wouter';
import { api, ok } from '../api';
import { ConfirmButton, CopyButton, ErrorText, StatusBadge } from '../components/bits';
import { useWorkspace } from '../session';
import { DatastoreBackups } from './DatastoreBackups';

type Kind = 'postgres' | 'key-value';

type Postgres = Awaited<ReturnType<typeof getPostgres>>;
const getPostgres = (id: string) => ok(api.GET('/v1/postgres/{postgresId}', { params: { path: { postgresId: id } } }));
type KeyValue = Awaited<ReturnType<typeof getKeyValue>>;
const getKeyValue = (id: string) => ok(api.GET('/v1/key-value/{keyValueId}', { params: { path: { keyValueId: id } } }));

function useDatastore(kind: Kind, id: string) {
  return useQuery<Postgres | KeyValue>({
    queryKey: [kind, 'one', id],
    refetchInterval: (q) => (q.state.data?.status === 'available' ? 30_000 : 2000),
    queryFn: () => (kind === 'postgres' ? getPostgres(id) : getKeyValue(id)),
  });
}

/** A datastore: status, connection info with copy buttons (developers and up), and its lifecycle actions. */
export function Datastore({ kind, id }: { kind: Kind; id: string }) {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const store = useDatastore(kind, id);
  const info = useQuery({
    queryKey: [kind, 'connection', id],
    enabled: workspace.can('developer') && store.data?.status === 'available',
    queryFn: async (): Promise<Record<string, string>> =>
      kind === 'postgres'
        ? ok(api.GET('/v1/postgres/{postgresId}/connection-info', { params: { path: { postgresId: id } } }))
        : ok(api.GET('/v1/key-value/{keyValueId}/connection-info', { params: { path: { keyValueId: id } } })),
  });
  const action = useMutation({
    mutationFn: async (what: 'suspend' | 'resume' | 'restart' | 'delete') => {
      if (kind === 'postgres') {
        const p = { params: { path: { postgresId: id } } };
        if (what === 'delete') return ok(api.DELETE('/v1/postgres/{postgresId}', p));
        return ok(api.POST(`/v1/postgres/{postgresId}/${what}`, p));
      }
      const p = { params: { path: { keyValueId: id } } };
      if (what === 'delete') return ok(api.DELETE('/v1/key-value/{keyValueId}', p));
      return ok(api.POST(`/v1/key-value/{keyValueId}/${what}`, p));
    },
    onSuccess: (_d, what) => {
      void queryClient.invalidateQueries({ queryKey: [kind] });
      if (what === 'delete') navigate('/datastores');
    },
  });
  if (store.error) return <ErrorText error={store.error} />;
  if (!store.data) return <p className="loading">Loading…</p>;
  const d = store.data;
  const suspended = d.status === 'suspended' || ('suspended' in d && d.suspended === 'suspended');
  return (
    <>
      <p className="crumbs">
        <Link href="/datastores">Datastores</Link> /
      </p>
      <div className="row wrap">
        <h1>{d.name}</h1>
        <StatusBadge status={d.status} />
        <span className="muted">
          {kind === 'postgres' ? 'Postgres' : 'Key value'} · {d.plan}
        </span>
      </div>
      {workspace.can('developer') && (
        <div className="row wrap actions">
          <ConfirmButton label="Restart" question={`Restart ${d.name}?`} onConfirm={() => action.mutate('restart')} />
          <ConfirmButton
            label={suspended ? 'Resume' : 'Suspend'}
            question={suspended ? `Resume ${d.name}?` : `Suspend ${d.name}? Connections are refused until resumed.`}
            onConfirm={() => action.mutate(suspended ? 'resume' : 'suspend')}
          />
          <ConfirmButton
            label="Delete"
            danger
            question={`Delete ${d.name} and all its data? This cannot be undone.`}
            confirm="Delete datastore"
            onConfirm={() => action.mutate('delete')}
          />
        </div>
      )}
      <ErrorText error={action.error ?? info.error} />
      <h2>Connection</h2>
      {!workspace.can('developer') ? (
        <p className="empty">Viewers cannot read connection details.</p>
      ) : d.status !== 'available' ? (
        <p className="empty">Shown once the datastore is available.</p>
      ) : (
        <dl className="pairs">
          {Object.entries(info.data ?? {})
            .filter(([, value]) => typeof value === 'string' && value)
            .map(([key, value]) => (
              <div key={key}>
                <dt>{key.replace(/([A-Z])/g, ' $1').toLowerCase()}</dt>
                <dd>
                  <code className="secret">{value}</code> <CopyButton text={value} />
                </dd>
              </div>
            ))}
        </dl>
      )}
      {d.status === 'available' && <DatastoreBackups kind={kind} id={id} />}
    </>
  );
}
