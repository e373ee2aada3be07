import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import type { paths } from '../../../../openapi/schema';
import { api, ok } from '../../api';
import { ActionForm, ErrorText } from '../../components/bits';
import { useWorkspace } from '../../session';
import { Autoscaling } from './Autoscaling';

type Service = paths['/v1/services/{serviceId}']['get']['responses'][200]['content']['application/json'];
type Plan = NonNullable<
  NonNullable<
    paths['/v1/services/{serviceId}']['patch']['requestBody']
  >['content']['application/json']['serviceDetails']
>['plan'];
const PLANS = ['free', 'starter', 'standard', 'pro', 'pro_plus'] as const satisfies Plan[];

const text = (value: unknown) => (typeof value === 'string' ? value : '');

/** The service's settings (PATCH): name, plan, commands, health check; and its instance count (scale). */
export function Settings({ service }: { service: Service }) {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const d = service.serviceDetails as Record<string, unknown>;
  const env = (d.envSpecificDetails ?? {}) as Record<string, unknown>;
  const [form, setForm] = useState({
    name: service.name,
    plan: text(d.plan) as Plan,
    buildCommand: text(env.buildCommand ?? d.buildCommand),
    startCommand: text(env.startCommand),
    healthCheckPath: text(d.healthCheckPath),
  });
  const [instances, setInstances] = useState(Number(d.numInstances ?? 1));
  const [saved, setSaved] = useState('');
  const path = { params: { path: { serviceId: service.id } } };
  const done = (what: string) => {
    setSaved(what);
    void queryClient.invalidateQueries({ queryKey: ['service', service.id] });
  };
  const save = useMutation({
    mutationFn: () =>
      ok(
        api.PATCH('/v1/services/{serviceId}', {
          ...path,
          body: {
            name: form.name,
            serviceDetails:
              service.type === 'static_site'
                ? { buildCommand: form.buildCommand || undefined }
                : {
                    ...(form.plan ? { plan: form.plan } : {}),
                    ...(service.type === 'web_service' ? { healthCheckPath: form.healthCheckPath } : {}),
                    envSpecificDetails: {
                      buildCommand: form.buildCommand || undefined,
                      startCommand: form.startCommand || undefined,
                    },
                  },
          },
        }),
      ),
    onSuccess: () => done('Saved: the next deploy uses the new settings.'),
  });
  const scale = useMutation({
    mutationFn: () => ok(api.POST('/v1/services/{serviceId}/scale', { ...path, body: { numInstances: instances } })),
    onSuccess: () => {
      done(`Scaling to ${instances} instance${instances === 1 ? '' : 's'}.`);
      void queryClient.invalidateQueries({ queryKey: ['instances', service.id] });
    },
  });
  if (!workspace.can('developer')) return <p className="empty">Viewers cannot change settings.</p>;
  const set = (key: keyof typeof form) => (e: { target: { value: string } }) =>
    setForm({ ...form, [key]: e.target.value });
  const runs = service.type !== 'static_site';
  return (
    <>
      <h2>Settings</h2>
      {saved && <p role="status">{saved}</p>}
      <ActionForm className="stack wide" onSubmit={() => save.mutate()}>
        <label>
          Name
          <input required maxLength={100} value={form.name} onChange={set('name')} />
        </label>
        {runs && (
          <label>
            Plan
            <select value={form.plan} onChange={set('plan')}>
              {PLANS.map((p) => (
                <option key={p}>{p}</option>
              ))}
            </select>
          </label>
        )}
        <label>
          Build command
          <input value={form.buildCommand} onChange={set('buildCommand')} placeholder="detected when empty" />
        </label>
        {runs && (
          <label>
            Start command
            <input value={form.startCommand} onChange={set('startCommand')} placeholder="detected when empty" />
          </label>
        )}
        {service.type === 'web_service' && (
          <label>
            Health check path
            <input value={form.healthCheckPath} onChange={set('healthCheckPath')} placeholder="/healthz" />
          </label>
        )}
        <ErrorText error={save.error} />
        <button className="primary" disabled={save.isPending}>
          Save settings
        </button>
      </ActionForm>
      {runs && service.type !== 'cron_job' && (
        <>
          <h2>Scaling</h2>
          <ActionForm className="row wrap" onSubmit={() => scale.mutate()}>
            <label>
              Instances
              <input
                type="number"
                min={1}
                max={100}
                required
                value={instances}
                onChange={(e) => setInstances(Number(e.target.value))}
              />
            </label>
            <button disabled={scale.isPending}>Scale</button>
          </ActionForm>
          <ErrorText error={scale.error} />
          <Autoscaling serviceId={service.id} current={d.autoscaling as Parameters<typeof Autoscaling>[0]['current']} />
        </>
      )}
    </>
  );
}
