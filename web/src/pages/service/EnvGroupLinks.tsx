import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok } from '../../api';
import { ActionForm, ErrorText } from '../../components/bits';
import { useWorkspace } from '../../session';

/** The workspace's env groups, linked to this service or not. */
export function EnvGroupLinks({ serviceId }: { serviceId: string }) {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [choice, setChoice] = useState('');
  const groups = useQuery({
    queryKey: ['env-groups', workspace.id],
    queryFn: () => ok(api.GET('/v1/env-groups', { params: { query: { ownerId: [workspace.id], limit: 100 } } })),
  });
  const link = useMutation({
    mutationFn: ({ id, linked }: { id: string; linked: boolean }) => {
      const params = { params: { path: { envGroupId: id, serviceId } } };
      return linked
        ? ok(api.DELETE('/v1/env-groups/{envGroupId}/services/{serviceId}', params))
        : ok(api.POST('/v1/env-groups/{envGroupId}/services/{serviceId}', params));
    },
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['env-groups', workspace.id] }),
  });
  const all = groups.data ?? [];
  const linked = all.filter((g) => g.serviceLinks.some((s) => s.id === serviceId));
  const others = all.filter((g) => !linked.includes(g));
  if (all.length === 0) return null;
  return (
    <>
      <h2>Env groups</h2>
      <ErrorText error={groups.error ?? link.error} />
      <ul className="list" aria-label="Linked env groups">
        {linked.map((g) => (
          <li key={g.id}>
            {g.name}
            <button type="button" className="small" onClick={() => link.mutate({ id: g.id, linked: true })}>
              Unlink
            </button>
          </li>
        ))}
        {linked.length === 0 && <li className="muted">No env group is linked.</li>}
      </ul>
      {others.length > 0 && (
        <ActionForm className="row" onSubmit={() => choice && link.mutate({ id: choice, linked: false })}>
          <label>
            Link an env group
            <select value={choice} onChange={(e) => setChoice(e.target.value)}>
              <option value="">Choose…</option>
              {others.map((g) => (
                <option key={g.id} value={g.id}>
                  {g.name}
                </option>
              ))}
            </select>
          </label>
          <button disabled={!choice || link.isPending}>Link</button>
        </ActionForm>
      )}
    </>
  );
}
