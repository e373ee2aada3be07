import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../../api';
import { ActionForm, ErrorText, StatusBadge } from '../../components/bits';
import { ago } from '../../lib/format';
import { useWorkspace } from '../../session';

const ENDED = new Set(['succeeded', 'failed', 'canceled']);

/** One-off jobs in the live build (and, for a cron job, "run now"): their status, exit code and cancel. */
export function Jobs({ service }: { service: { id: string; type: string } }) {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [command, setCommand] = useState('');
  const serviceId = service.id;
  const jobs = useQuery({
    queryKey: ['jobs', serviceId],
    queryFn: async () =>
      items(
        await ok(api.GET('/v1/services/{serviceId}/jobs', { params: { path: { serviceId }, query: { limit: 20 } } })),
        'job',
      ),
    refetchInterval: (q) => (q.state.data?.some((j) => !ENDED.has(j.status)) ? 1000 : 10_000),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: ['jobs', serviceId] });
  const run = useMutation({
    mutationFn: () =>
      ok(
        api.POST('/v1/services/{serviceId}/jobs', { params: { path: { serviceId } }, body: { startCommand: command } }),
      ),
    onSuccess: () => {
      setCommand('');
      void done();
    },
  });
  const runCron = useMutation({
    mutationFn: () => ok(api.POST('/v1/cron-jobs/{cronJobId}/runs', { params: { path: { cronJobId: serviceId } } })),
  });
  const cancel = useMutation({
    mutationFn: (jobId: string) =>
      ok(api.POST('/v1/services/{serviceId}/jobs/{jobId}/cancel', { params: { path: { serviceId, jobId } } })),
    onSuccess: () => done(),
  });
  const canRun = workspace.can('developer');
  return (
    <>
      <h2>Jobs</h2>
      <ErrorText error={jobs.error ?? run.error ?? cancel.error ?? runCron.error} />
      {canRun && service.type === 'cron_job' && (
        <p className="row">
          <button type="button" onClick={() => runCron.mutate()} disabled={runCron.isPending}>
            Run the cron job now
          </button>
          {runCron.isSuccess && <span role="status">Started.</span>}
        </p>
      )}
      {canRun && (
        <ActionForm className="row wrap" onSubmit={() => run.mutate()}>
          <label>
            Command
            <input
              required
              value={command}
              onChange={(e) => setCommand(e.target.value)}
              placeholder="npm run migrate"
            />
          </label>
          <button className="primary" disabled={run.isPending}>
            Run job
          </button>
        </ActionForm>
      )}
      <ul className="list" aria-label="Jobs">
        {(jobs.data ?? []).map((j) => (
          <li key={j.id}>
            <code>{j.startCommand}</code>
            <StatusBadge status={j.status} />
            {j.exitCode !== null && j.exitCode !== undefined && <span className="muted">exit {j.exitCode}</span>}
            <span className="muted">{ago(j.createdAt)}</span>
            {canRun && !ENDED.has(j.status) && (
              <button type="button" className="small" onClick={() => cancel.mutate(j.id)}>
                Cancel
              </button>
            )}
          </li>
        ))}
        {jobs.data?.length === 0 && <li className="muted">No jobs yet.</li>}
      </ul>
    </>
  );
}
