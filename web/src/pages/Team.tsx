import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../api';
import { ActionForm, ConfirmButton, CopyButton, ErrorText } from '../components/bits';
import { ago } from '../lib/format';
import { useWorkspace, type Role } from '../session';

const ROLES: Role[] = ['viewer', 'developer', 'admin', 'owner'];

/** Members and their roles, and invites: the invite's link is shown once, to be sent to the invitee. */
export function Team() {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [invite, setInvite] = useState({ email: '', role: 'developer' as Role });
  const [link, setLink] = useState<string | null>(null);
  const ownerId = workspace.id;
  const members = useQuery({
    queryKey: ['members', ownerId],
    queryFn: () => ok(api.GET('/v1/team-members', { params: { query: { ownerId, limit: 100 } } })),
  });
  const invites = useQuery({
    queryKey: ['invites', ownerId],
    enabled: workspace.can('admin'),
    queryFn: async () =>
      items(await ok(api.GET('/v1/team-invites', { params: { query: { ownerId, limit: 100 } } })), 'teamInvite'),
  });
  const done = () => queryClient.invalidateQueries({ queryKey: ['invites', ownerId] });
  const send = useMutation({
    mutationFn: () => ok(api.POST('/v1/team-invites', { body: { ...invite, ownerId } })),
    onSuccess: (made) => {
      setLink(made.acceptUrl);
      setInvite({ ...invite, email: '' });
      void done();
    },
  });
  const revoke = useMutation({
    mutationFn: (inviteId: string) => ok(api.DELETE('/v1/team-invites/{inviteId}', { params: { path: { inviteId } } })),
    onSuccess: () => done(),
  });
  const change = useMutation({
    mutationFn: ({ userId, role }: { userId: string; role: Role }) =>
      ok(api.PATCH('/v1/team-members/{userId}', { params: { path: { userId }, query: { ownerId } }, body: { role } })),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['members', ownerId] }),
  });
  const remove = useMutation({
    mutationFn: (userId: string) =>
      ok(api.DELETE('/v1/team-members/{userId}', { params: { path: { userId }, query: { ownerId } } })),
    onSettled: () => queryClient.invalidateQueries({ queryKey: ['members', ownerId] }),
  });
  const admin = workspace.can('admin');
  return (
    <>
      <h1>Team</h1>
      <ErrorText error={members.error ?? change.error ?? remove.error} />
      <div className="table-wrap">
        <table aria-label="Members">
          <thead>
            <tr>
              <th scope="col">Name</th>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">
                <span className="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {(members.data ?? []).map(({ teamMember: m }) => (
              <tr key={m.userId}>
                <td>{m.name}</td>
                <td>{m.email}</td>
                <td>
                  {admin ? (
                    <select
                      aria-label={`Role of ${m.email}`}
                      value={m.role}
                      onChange={(e) => change.mutate({ userId: m.userId, role: e.target.value as Role })}
                    >
                      {ROLES.map((r) => (
                        <option key={r}>{r}</option>
                      ))}
                    </select>
                  ) : (
                    m.role
                  )}
                </td>
                <td>
                  {admin && (
                    <ConfirmButton
                      label="Remove"
                      danger
                      question={`Remove ${m.email} from ${workspace.name}?`}
                      onConfirm={() => remove.mutate(m.userId)}
                    />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {admin && (
        <>
          <h2>Invite someone</h2>
          <ActionForm className="row wrap" onSubmit={() => send.mutate()}>
            <label>
              Email
              <input
                type="email"
                required
                value={invite.email}
                onChange={(e) => setInvite({ ...invite, email: e.target.value })}
              />
            </label>
            <label>
              Role
              <select value={invite.role} onChange={(e) => setInvite({ ...invite, role: e.target.value as Role })}>
                {ROLES.filter((r) => r !== 'owner').map((r) => (
                  <option key={r}>{r}</option>
                ))}
              </select>
            </label>
            <button className="primary" disabled={send.isPending}>
              Invite
            </button>
          </ActionForm>
          <ErrorText error={send.error ?? revoke.error} />
          {link && (
            <p role="status" className="card">
              Send this link to the invitee (it is shown only now):{' '}
              <code className="break" data-testid="invite-link">
                {link}
              </code>{' '}
              <CopyButton text={link} />
            </p>
          )}
          <h2>Pending invites</h2>
          <ul className="list" aria-label="Pending invites">
            {(invites.data ?? []).map((i) => (
              <li key={i.id}>
                {i.email}{' '}
                <span className="muted">
                  as {i.role}, expires {ago(i.expiresAt)}
                </span>
                <button type="button" className="small" onClick={() => revoke.mutate(i.id)}>
                  Revoke
                </button>
              </li>
            ))}
            {invites.data?.length === 0 && <li className="muted">None.</li>}
          </ul>
        </>
      )}
    </>
  );
}
