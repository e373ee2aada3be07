import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../../api';
import { ConfirmButton, ErrorText, StatusBadge } from '../../components/bits';
import { LogView } from '../../components/LogView';
import { ago } from '../../lib/format';
import { uploadArchive } from '../../lib/upload';
import { useLogTail } from '../../lib/log-tail';
import { useWorkspace } from '../../session';

const FINISHED = new Set(['live', 'deactivated', 'build_failed', 'update_failed', 'pre_deploy_failed', 'canceled']);

/** A deploy's build output, live while it builds (the log stream's build lines from its start). */
function BuildOutput({
  serviceId,
  deploy,
}: {
  serviceId: string;
  deploy: { id: string; createdAt: string; finishedAt?: string };
}) {
  // Fixed when first shown: a build that finishes meanwhile keeps its stream (no restart from the top).
  const [query] = useState(() => {
    const q = new URLSearchParams({ resource: serviceId, type: 'build', startTime: deploy.createdAt });
    if (deploy.finishedAt) q.set('endTime', new Date(Date.parse(deploy.finishedAt) + 2000).toISOString());
    return q;
  });
  const tail = useLogTail(query);
  return (
    <>
      <ErrorText error={tail.error ? new Error(tail.error) : null} />
      <LogView entries={tail.entries} label={`Build output of ${deploy.id}`} empty="No build output yet." />
    </>
  );
}

export function Deploys({ service }: { service: { id: string; name: string } }) {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [selected, setSelected] = useState<string | null>(null);
  const deploys = useQuery({
    queryKey: ['deploys', service.id],
    queryFn: async () =>
      items(
        await ok(
          api.GET('/v1/services/{serviceId}/deploys', {
            params: { path: { serviceId: service.id }, query: { limit: 20 } },
          }),
        ),
        'deploy',
      ),
    // Live status: polled while a deploy is under way.
    refetchInterval: (q) => (q.state.data?.some((d) => !FINISHED.has(d.status)) ? 1000 : 10_000),
  });
  const instances = useQuery({
    queryKey: ['instances', service.id],
    queryFn: () => ok(api.GET('/v1/services/{serviceId}/instances', { params: { path: { serviceId: service.id } } })),
    refetchInterval: 10_000,
  });
  const rollback = useMutation({
    mutationFn: (deployId: string) =>
      ok(
        api.POST('/v1/services/{serviceId}/rollback', {
          params: { path: { serviceId: service.id } },
          body: { deployId },
        }),
      ),
    onSuccess: (deploy) => {
      setSelected(deploy.id);
      void queryClient.invalidateQueries({ queryKey: ['deploys', service.id] });
    },
  });
  const cancel = useMutation({
    mutationFn: (deployId: string) =>
      ok(
        api.POST('/v1/services/{serviceId}/deploys/{deployId}/cancel', {
          params: { path: { serviceId: service.id, deployId } },
        }),
      ),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['deploys', service.id] }),
  });
  const [progress, setProgress] = useState<number | null>(null);
  const upload = useMutation({
    mutationFn: (file: File) => uploadArchive(service.id, file, setProgress),
    onSuccess: (source) => {
      if (source.deployId) setSelected(source.deployId);
      void queryClient.invalidateQueries({ queryKey: ['deploys', service.id] });
    },
    onSettled: () => setProgress(null),
  });
  const rows = deploys.data ?? [];
  const shown = rows.find((d) => d.id === selected) ?? rows[0];
  const liveId = rows.find((d) => d.status === 'live')?.id;
  return (
    <div className="split">
      <div>
        <h2>Deploys</h2>
        {workspace.can('developer') && (
          <label className="inline">
            Deploy a new archive:{' '}
            <input
              type="file"
              accept=".tar.gz,.tgz,.zip,application/gzip,application/zip"
              disabled={upload.isPending}
              onChange={(e) => {
                const file = e.target.files?.[0];
                if (file) upload.mutate(file);
                e.target.value = '';
              }}
            />
          </label>
        )}
        {progress !== null && (
          <progress value={progress} max={1} aria-label="Upload progress">
            {Math.round(progress * 100)} %
          </progress>
        )}
        <ErrorText error={deploys.error ?? rollback.error ?? cancel.error ?? upload.error} />
        {rows.length === 0 && !deploys.isPending && <p className="empty">No deploys yet.</p>}
        <ul className="list" aria-label="Deploys">
          {rows.map((d) => (
            <li key={d.id} className={d.id === shown?.id ? 'selected' : undefined}>
              <button
                type="button"
                className="link"
                onClick={() => setSelected(d.id)}
                aria-pressed={d.id === shown?.id}
              >
                <code>{d.id.slice(0, 12)}</code>
              </button>
              <StatusBadge status={d.status} />
              <span className="muted">
                {d.trigger} · {ago(d.createdAt)}
              </span>
              {d.failureReason && <span className="error small-text">{d.failureReason}</span>}
              {workspace.can('developer') && !FINISHED.has(d.status) && (
                <button type="button" className="small" onClick={() => cancel.mutate(d.id)}>
                  Cancel
                </button>
              )}
              {workspace.can('developer') && d.status === 'deactivated' && liveId && (
                <ConfirmButton
                  label="Roll back"
                  question={`Roll ${service.name} back to ${d.id}? Its build is started again as it was, with no rebuild.`}
                  disabled={rollback.isPending}
                  onConfirm={() => rollback.mutate(d.id)}
                />
              )}
            </li>
          ))}
        </ul>
        <h2>Instances</h2>
        <ul className="list" aria-label="Instances">
          {(instances.data ?? []).map((i) => (
            <li key={i.id}>
              <code>{i.id}</code> <span className="muted">started {ago(i.createdAt)}</span>
            </li>
          ))}
          {instances.data?.length === 0 && <li className="muted">No instance is running.</li>}
        </ul>
      </div>
      <div>
        {shown && (
          <>
            <h2>
              Build output <code className="muted">{shown.id.slice(0, 12)}</code>
            </h2>
            <BuildOutput key={shown.id} serviceId={service.id} deploy={shown} />
          </>
        )}
      </div>
    </div>
  );
}
