import { useQuery } from '@tanstack/react-query';
import { Link } from 'wouter';
import { api, items, ok } from '../api';
import { Pager, useCursorPages } from '../components/Pager';
import { Empty, ErrorText, StatusBadge } from '../components/bits';
import { ago } from '../lib/format';
import { useWorkspace } from '../session';

const PAGE = 50;

/** The latest deploy's status: one small query per row shown (the list itself does not carry it). */
function DeployStatus({ serviceId }: { serviceId: string }) {
  const latest = useQuery({
    queryKey: ['deploys', serviceId, 'latest'],
    queryFn: async () =>
      items(
        await ok(api.GET('/v1/services/{serviceId}/deploys', { params: { path: { serviceId }, query: { limit: 1 } } })),
        'deploy',
      )[0] ?? null,
    staleTime: 5_000,
  });
  if (latest.isPending) return <span className="badge muted">…</span>;
  return <StatusBadge status={latest.data?.status ?? 'not deployed'} />;
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
                    ) : (
                      <DeployStatus serviceId={service.id} />
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
