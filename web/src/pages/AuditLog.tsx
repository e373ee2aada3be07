import { useQuery } from '@tanstack/react-query';
import { api, items, ok } from '../api';
import { Pager, useCursorPages } from '../components/Pager';
import { ErrorText } from '../components/bits';
import { ago } from '../lib/format';
import { useWorkspace } from '../session';

const PAGE = 50;

/** Who did what in the workspace, newest first. */
export function AuditLog() {
  const workspace = useWorkspace();
  const pages = useCursorPages();
  const cursor = pages.cursor;
  const log = useQuery({
    queryKey: ['audit', workspace.id, cursor],
    queryFn: () =>
      ok(
        api.GET('/v1/owners/{ownerId}/audit-logs', {
          params: { path: { ownerId: workspace.id }, query: { limit: PAGE, cursor } },
        }),
      ),
  });
  const rows = log.data ?? [];
  return (
    <>
      <h1>Audit log</h1>
      <ErrorText error={log.error} />
      <div className="table-wrap">
        <table aria-label="Audit log">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Who</th>
              <th scope="col">Event</th>
              <th scope="col">Status</th>
            </tr>
          </thead>
          <tbody>
            {items(rows, 'auditLog').map((e) => (
              <tr key={e.id}>
                <td title={e.timestamp}>{ago(e.timestamp)}</td>
                <td>{e.actor.email ?? e.actor.type}</td>
                <td>{e.event}</td>
                <td>{e.status}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Pager pages={pages} rows={rows} size={PAGE} labels={['Newer', 'Older']} />
    </>
  );
}
