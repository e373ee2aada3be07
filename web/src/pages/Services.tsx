import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { api, items, ok } from '../api';
import { Pager, useCursorPages } from '../components/Pager';
import { Empty, ErrorText, StatusBadge } from '../components/bits';
import { ago } from '../lib/format';
import { useWorkspace } from '../session';

const PAGE = 50;

/**
 * The latest deploy's status of each service shown (the list itself does not carry it): asked four at a time, and
 * rendered once when all have answered, not a re-render per answer.
 */
function useDeployStatuses(ids: string[]) {
  return useQuery({
    queryKey: ['deploy-statuses', ids],
    enabled: ids.length > 0,
    staleTime: 5_000,
    queryFn: async () => {
      const statuses = new Map<string, string>();
      let next = 0;
      const worker = async () => {
        while (next < ids.length) {
          const serviceId = ids[next++]!;
          const rows = await ok(
            api.GET('/v1/services/{serviceId}/deploys', { params: { path: { serviceId }, query: { limit: 1 } } }),
          );
          statuses.set(serviceId, items(rows, 'deploy')[0]?.status ?? 'not deployed');
        }
      };
      await Promise.all([worker(), worker(), worker(), worker()]);
      return statuses;
    },
  });
}

export function Services() {
  const workspace = useWorkspace();
  const pages = useCursorPages();
  const cursor = pages.cursor;
  const list = useQuery({
    queryKey: ['services', workspace.id, cursor],
    queryFn: () => ok(api.GET('/v1/services', { params: { query: { ownerId: [workspace.id], limit: PAGE, cursor } } })),
  });
  const rows = list.data ?? [];
  const statuses = useDeployStatuses(rows.filter((r) => r.service.suspended !== 'suspended').map((r) => r.service.id));
  return (
    <>
      <div className="row">
        <h1>Services</h1>
        <span className="spacer" />
        {workspace.can('developer') && (
          <Link href="/services/new" className="button primary">
            New service
          </Link>
        )}
      </div>
      <ErrorText error={list.error} />
      {list.isPending ? (
        <p className="loading">Loading…</p>
      ) : rows.length === 0 && !cursor ? (
        <Empty>No services yet. Upload an archive or connect a repository to create one.</Empty>
      ) : (
        <div className="table-wrap">
          <table aria-label="Services">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col" className="hide-narrow">
                  Type
                </th>
                <th scope="col" className="hide-narrow">
                  Runtime
                </th>
                <th scope="col">Updated</th>
              </tr>
            </thead>
            <tbody>
              {rows.map(({ service }) => (
                <tr key={service.id}>
                  <td>
                    <Link href={`/services/${service.id}`}>{service.name}</Link>
                  </td>
                  <td>
                    {service.suspended === 'suspended' ? (
                      <StatusBadge status="suspended" />
                    ) : statuses.data ? (
                      <StatusBadge status={statuses.data.get(service.id)} />
                    ) : (
                      <span className="badge muted">…</span>
                    )}
                  </td>
                  <td className="hide-narrow">{service.type.replace(/_/g, ' ')}</td>
                  <td className="hide-narrow">{String(service.serviceDetails.runtime ?? 'static')}</td>
                  <td>{ago(service.updatedAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <Pager pages={pages} rows={rows} size={PAGE} />
    </>
  );
}
