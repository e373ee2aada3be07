import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../api';
import { ActionForm, ConfirmButton, Empty, ErrorText, StatusBadge } from '../components/bits';
import { ago } from '../lib/format';
import { useWorkspace } from '../session';

/** A webhook's delivery log: each event, its attempts and the endpoint's answers. */
function Deliveries({ webhookId }: { webhookId: string }) {
  const events = useQuery({
    queryKey: ['webhook-events', webhookId],
    refetchInterval: 5000,
    queryFn: async () =>
      items(
        await ok(api.GET('/v1/webhooks/{webhookId}/events', { params: { path: { webhookId }, query: { limit: 20 } } })),
        'webhookEvent',
      ),
  });
  return (
    <>
      <ErrorText error={events.error} />
      <ul className="list" aria-label="Deliveries">
        {(events.data ?? []).map((e) => (
          <li key={e.id}>
            <code>{e.eventType}</code>
            <StatusBadge status={e.error ? 'failed' : e.statusCode ? String(e.statusCode) : 'pending'} />
            <span className="muted">{ago(e.sentAt)}</span>
            {e.error && <span className="error small-text">{e.error}</span>}
          </li>
        ))}
        {events.data?.length === 0 && <li className="muted">No deliveries yet.</li>}
      </ul>
    </>
  );
}

export function Webhooks() {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [form, setForm] = useState({ name: '', url: '' });
  const [open, setOpen] = useState<string | null>(null);
  const hooks = useQuery({
    queryKey: ['webhooks', workspace.id],
    enabled: workspace.can('admin'),
    queryFn: async () =>
      items(
        await ok(api.GET('/v1/webhooks', { params: { query: { ownerId: [workspace.id], limit: 100 } } })),
        'webhook',
      ),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: ['webhooks', workspace.id] });
  const create = useMutation({
    mutationFn: () => ok(api.POST('/v1/webhooks', { body: { ...form, ownerId: workspace.id } })),
    onSuccess: () => {
      setForm({ name: '', url: '' });
      void done();
    },
  });
  const test = useMutation({
    mutationFn: (webhookId: string) =>
      ok(api.POST('/v1/webhooks/{webhookId}/test', { params: { path: { webhookId } } })),
    onSuccess: (_d, id) => queryClient.invalidateQueries({ queryKey: ['webhook-events', id] }),
  });
  const remove = useMutation({
    mutationFn: (webhookId: string) => ok(api.DELETE('/v1/webhooks/{webhookId}', { params: { path: { webhookId } } })),
    onSuccess: () => done(),
  });
  if (!workspace.can('admin')) return <Empty>Webhooks are managed by admins.</Empty>;
  return (
    <>
      <h1>Webhooks</h1>
      <ErrorText error={hooks.error ?? test.error ?? remove.error} />
      {hooks.data?.length === 0 && <Empty>No webhooks yet.</Empty>}
      {(hooks.data ?? []).map((w) => (
        <article key={w.id} className="card">
          <div className="row wrap">
            <h2 className="inline-heading">{w.name}</h2>
            <code className="break">{w.url}</code>
            <StatusBadge status={w.enabled ? 'enabled' : 'disabled'} />
            <span className="spacer" />
            <button type="button" className="small" onClick={() => test.mutate(w.id)}>
              Send a test event
            </button>
            <button
              type="button"
              className="small"
              aria-expanded={open === w.id}
              onClick={() => setOpen(open === w.id ? null : w.id)}
            >
              Deliveries
            </button>
            <ConfirmButton
              label="Delete"
              danger
              question={`Delete the webhook ${w.name}?`}
              onConfirm={() => remove.mutate(w.id)}
            />
          </div>
          {open === w.id && <Deliveries webhookId={w.id} />}
        </article>
      ))}
      <h2>New webhook</h2>
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
          URL
          <input type="url" required value={form.url} onChange={(e) => setForm({ ...form, url: e.target.value })} />
        </label>
        <button className="primary" disabled={create.isPending}>
          Create webhook
        </button>
      </ActionForm>
      <ErrorText error={create.error} />
    </>
  );
}
