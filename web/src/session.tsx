import { useQuery, useQueryClient, type QueryClient } from '@tanstack/react-query';
import { createContext, useContext, useMemo, useState, type ReactNode } from 'react';
import { api, ok } from './api';

export type Role = 'owner' | 'admin' | 'developer' | 'viewer';
const RANK: Record<Role, number> = { viewer: 0, developer: 1, admin: 2, owner: 3 };

/** The signed-in user, or null (401): the session cookie is HTTP-only, so the API is the only one who knows. */
const meQuery = {
  queryKey: ['me'],
  queryFn: async () => {
    const { data, response } = await api.GET('/v1/users');
    if (response.status === 401) return null;
    if (!data) throw new Error(`HTTP ${response.status}`);
    return data;
  },
  staleTime: 60_000,
};
const ownersQuery = {
  queryKey: ['owners'],
  staleTime: 60_000,
  queryFn: async () => (await ok(api.GET('/v1/owners', { params: { query: { limit: 100 } } }))).map((r) => r.owner),
};

export const useMe = () => useQuery(meQuery);

/** Who is signed in and their workspaces, asked at once when the app starts (not one after the other). */
export function prefetchSession(queryClient: QueryClient) {
  void queryClient.prefetchQuery(meQuery);
  void queryClient.prefetchQuery(ownersQuery);
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
  const owners = useQuery(ownersQuery);
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
  if (owners.error && !owners.isFetching) return <p role="alert">{owners.error.message}</p>;
  // Pages render before the role is known (it only adds buttons): the services list is not held behind it.
  if (!value) return <p className="loading">Loading…</p>;
  return <WorkspaceContext.Provider value={value}>{children}</WorkspaceContext.Provider>;
}

export function useWorkspace(): Workspace {
  const value = useContext(WorkspaceContext);
  if (!value) throw new Error('useWorkspace outside WorkspaceProvider');
  return value;
}
