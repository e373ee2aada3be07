import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok } from '../api';
import { ActionForm, ErrorText } from '../components/bits';
import { useWorkspace } from '../session';

type ToSend = 'none' | 'failure' | 'all';

/** Which events notify the workspace (failed deploys, crashes, datastores, certificates), by email and Slack. */
export function Notifications() {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const ownerId = workspace.id;
  const [slack, setSlack] = useState('');
  const settings = useQuery({
    queryKey: ['notifications', ownerId],
    queryFn: () => ok(api.GET('/v1/notification-settings/owners/{ownerId}', { params: { path: { ownerId } } })),
  });
  const patch = useMutation({
    mutationFn: (body: { emailEnabled?: boolean; notificationsToSend?: ToSend; slackWebhookUrl?: string | null }) =>
      ok(api.PATCH('/v1/notification-settings/owners/{ownerId}', { params: { path: { ownerId } }, body })),
    onSuccess: () => {
      setSlack('');
      void queryClient.invalidateQueries({ queryKey: ['notifications', ownerId] });
    },
  });
  const s = settings.data;
  const admin = workspace.can('admin');
  return (
    <>
      <h1>Notifications</h1>
      <ErrorText error={settings.error ?? patch.error} />
      {s && (
        <div className="stack wide">
          <label>
            Notify about
            <select
              disabled={!admin}
              value={s.notificationsToSend}
              onChange={(e) => patch.mutate({ notificationsToSend: e.target.value as ToSend })}
            >
              <option value="failure">failures only</option>
              <option value="all">all events</option>
              <option value="none">nothing</option>
            </select>
          </label>
          <label className="inline">
            <input
              type="checkbox"
              disabled={!admin}
              checked={s.emailEnabled}
              onChange={(e) => patch.mutate({ emailEnabled: e.target.checked })}
            />{' '}
            By email to the workspace's members
          </label>
          <p>
            Slack: {s.slackEnabled ? 'a webhook is set (it is never shown again)' : 'not set'}
            {admin && s.slackEnabled && (
              <>
                {' '}
                <button type="button" className="small" onClick={() => patch.mutate({ slackWebhookUrl: null })}>
                  Remove
                </button>
              </>
            )}
          </p>
          {admin && (
            <ActionForm className="row wrap" onSubmit={() => patch.mutate({ slackWebhookUrl: slack })}>
              <label>
                Slack incoming webhook URL
                <input type="url" required value={slack} onChange={(e) => setSlack(e.target.value)} />
              </label>
              <button disabled={patch.isPending}>Save</button>
            </ActionForm>
          )}
        </div>
      )}
    </>
  );
}
