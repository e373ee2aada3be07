import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useLocation } from 'wouter';
import { api, ok } from '../../api';
import { ConfirmButton, ErrorText, StatusBadge } from '../../components/bits';
import { useWorkspace } from '../../session';
import { Deploys } from './Deploys';
import { Disk } from './Disk';
import { Jobs } from './Jobs';
import { Settings } from './Settings';
import { Domains } from './Domains';
import { Env } from './Env';
import { Events } from './Events';
import { Logs } from './Logs';
import { Metrics } from './Metrics';

const TABS = [
  ['deploys', 'Deploys'],
  ['logs', 'Logs'],
  ['environment', 'Environment'],
  ['domains', 'Domains'],
  ['metrics', 'Metrics'],
  ['events', 'Events'],
  ['jobs', 'Jobs'],
  ['disk', 'Disk'],
  ['settings', 'Settings'],
] as const;

export function useService(id: string) {
  return useQuery({
    queryKey: ['service', id],
    queryFn: () => ok(api.GET('/v1/services/{serviceId}', { params: { path: { serviceId: id } } })),
  });
}

/** A service: its actions (each confirmed) above tabs; /services/:id/:tab is a deep link. */
export default function ServicePage({ id, tab }: { id: string; tab: string }) {
  const workspace = useWorkspace();
  const service = useService(id);
  const queryClient = useQueryClient();
  const [, navigate] = useLocation();
  const path = { params: { path: { serviceId: id } } };
  const action = useMutation({
    mutationFn: async (what: 'deploy' | 'restart' | 'suspend' | 'resume' | 'delete') => {
      if (what === 'deploy') return ok(api.POST('/v1/services/{serviceId}/deploys', { ...path, body: {} }));
      if (what === 'restart') return ok(api.POST('/v1/services/{serviceId}/restart', path));
      if (what === 'suspend') return ok(api.POST('/v1/services/{serviceId}/suspend', path));
      if (what === 'resume') return ok(api.POST('/v1/services/{serviceId}/resume', path));
      return ok(api.DELETE('/v1/services/{serviceId}', path));
    },
    onSuccess: (_data, what) => {
      void queryClient.invalidateQueries({ queryKey: ['service', id] });
      void queryClient.invalidateQueries({ queryKey: ['deploys', id] });
      if (what === 'delete') {
        void queryClient.invalidateQueries({ queryKey: ['services'] });
        navigate('/services');
      }
    },
  });
  if (service.error) return <ErrorText error={service.error} />;
  if (!service.data) return <p className="loading">Loading…</p>;
  const s = service.data;
  const url = typeof s.serviceDetails.url === 'string' ? s.serviceDetails.url : '';
  const canAct = workspace.can('developer');
  const suspended = s.suspended === 'suspended';
  return (
    <>
      <p className="crumbs">
        <Link href="/services">Services</Link> /
      </p>
      <div className="row wrap">
        <h1>{s.name}</h1>
        {suspended && <StatusBadge status="suspended" />}
        <span className="muted">{s.type.replace(/_/g, ' ')}</span>
        {url && (
          <a href={url} target="_blank" rel="noreferrer">
            {url}
          </a>
        )}
      </div>
      {canAct && (
        <div className="row wrap actions">
          <button type="button" className="primary" disabled={action.isPending} onClick={() => action.mutate('deploy')}>
            Manual deploy
          </button>
          <ConfirmButton
            label="Restart"
            question={`Restart every instance of ${s.name}? Each is replaced in turn, with no downtime.`}
            disabled={action.isPending || suspended}
            onConfirm={() => action.mutate('restart')}
          />
          {suspended ? (
            <ConfirmButton
              label="Resume"
              question={`Resume ${s.name}?`}
              disabled={action.isPending}
              onConfirm={() => action.mutate('resume')}
            />
          ) : (
            <ConfirmButton
              label="Suspend"
              question={`Suspend ${s.name}? Its instances stop and its URL answers 503 until resumed.`}
              disabled={action.isPending}
              onConfirm={() => action.mutate('suspend')}
            />
          )}
          <ConfirmButton
            label="Delete"
            danger
            question={`Delete ${s.name}, its deploys, logs and env vars? This cannot be undone.`}
            confirm="Delete service"
            disabled={action.isPending}
            onConfirm={() => action.mutate('delete')}
          />
        </div>
      )}
      <ErrorText error={action.error} />
      <nav className="tabs" aria-label="Service">
        {TABS.map(([key, label]) => (
          <Link key={key} href={`/services/${id}/${key}`} aria-current={tab === key ? 'page' : undefined}>
            {label}
          </Link>
        ))}
      </nav>
      <section>
        {tab === 'deploys' && <Deploys service={s} />}
        {tab === 'logs' && <Logs serviceId={id} />}
        {tab === 'environment' && <Env serviceId={id} />}
        {tab === 'domains' && <Domains serviceId={id} />}
        {tab === 'metrics' && <Metrics serviceId={id} />}
        {tab === 'events' && <Events serviceId={id} />}
        {tab === 'jobs' && <Jobs service={s} />}
        {tab === 'disk' && <Disk serviceId={id} />}
        {tab === 'settings' && <Settings service={s} />}
      </section>
    </>
  );
}
