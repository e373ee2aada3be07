import { useQuery, useQueryClient } from '@tanstack/react-query';
import { createContext, useContext, useMemo, useState, type ReactNode } from 'react';
import { api, ok } from './api';

export type Role = 'owner' | 'admin' | 'developer' | 'viewer';
const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2, owner: 3 };

/** The signed-in user, or null (401): the session cookie is HTTP-only, so the API is the only one who knows. */
export function useMe() {
  return useQuery({
    queryKey: ['me'],
    queryFn: async () => {
      const { data, response } = await api.GET('/v1/users');
      if (response.status === 401) return null;
      if (!data) throw new Error(`HTTP ${response.status}`);
      return data;
    },
    staleTime: 60_000,
  });
}

interface Workspace {
  id: string;
  name: string;
  /** The signed-in user's role in it. */
  role: Role;
  can: (role: Role) => boolean;
  choose: (id: string) => void;
  all: Array<{ id: string; name: string }>;
}

const WorkspaceContext = createContext<Workspace | null>(null);
/** Which workspace the switcher shows: not a secret, so it may live in localStorage. */
const CHOSEN = 'slipway.workspace';

export function WorkspaceProvider({ userId, children }: { userId: string; children: ReactNode }) {
  const queryClient = useQueryClient();
  const [chosen, setChosen] = useState(() => localStorage.getItem(CHOSEN));
  const owners = useQuery({
    queryKey: ['owners'],
    queryFn: async () => (await ok(api.GET('/v1/owners', { params: { query: { limit: 100 } } }))).map((r) => r.owner),
  });
  const id = owners.data?.find((o) => o.id === chosen)?.id ?? owners.data?.[0]?.id;
  const members = useQuery({
    queryKey: ['members', id],
    enabled: !!id,
    queryFn: () => ok(api.GET('/v1/team-members', { params: { query: { ownerId: id!, limit: 100 } } })),
  });
  const role = (members.data?.find((m) => m.teamMember.userId === userId)?.teamMember.role ?? 'viewer') as Role;
  const value = useMemo<Workspace | null>(
    () =>
      id && owners.data
        ? {
            id,
            name: owners.data.find((o) => o.id === id)?.name ?? id,
            role,
            can: (needed) => RANK[role] >= RANK[needed],
            all: owners.data,
            choose: (next) => {
              localStorage.setItem(CHOSEN, next);
              setChosen(next);
              void queryClient.invalidateQueries();
            },
          }
        : null,
    [id, owners.data, role, queryClient],
  );
  if (owners.error) return <p role="alert">{owners.error.message}</p>;
  if (!value || members.isPending) return <p className="loading">Loading…</p>;
  return <WorkspaceContext.Provider value={value}>{children}</WorkspaceContext.Provider>;
}

export function useWorkspace(): Workspace {
  const value = useContext(WorkspaceContext);
  if (!value) throw new Error('useWorkspace outside WorkspaceProvider');
  return value;
}
