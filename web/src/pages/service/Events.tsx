import { useQuery } from '@tanstack/react-query';
import { api, items, ok } from '../../api';
import { ErrorText } from '../../components/bits';
import { ago } from '../../lib/format';

export function Events({ serviceId }: { serviceId: string }) {
  const events = useQuery({
    queryKey: ['events', serviceId],
    queryFn: async () =>
      items(
        await ok(api.GET('/v1/services/{serviceId}/events', { params: { path: { serviceId }, query: { limit: 50 } } })),
        'event',
      ),
    refetchInterval: 10_000,
  });
  return (
    <>
      <h2>Events</h2>
      <ErrorText error={events.error} />
      {events.data?.length === 0 && <p className="empty">No events yet.</p>}
      <ul className="list" aria-label="Events">
        {(events.data ?? []).map((e) => (
          <li key={e.id}>
            <strong>{e.type.replace(/_/g, ' ')}</strong>
            <span className="muted">{ago(e.timestamp)}</span>
            <code className="small-text">{JSON.stringify(e.details)}</code>
          </li>
        ))}
      </ul>
    </>
  );
}
