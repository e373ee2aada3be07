import { useQuery } from '@tanstack/react-query';
import { api, ok } from '../api';
import { ErrorText } from '../components/bits';
import { bytes, money } from '../lib/format';
import { useWorkspace } from '../session';

/** This month's usage per resource, and the cost estimate (so far, and projected to the month's end). */
export function Usage() {
  const workspace = useWorkspace();
  const ownerId = workspace.id;
  const usage = useQuery({
    queryKey: ['usage', ownerId],
    queryFn: () => ok(api.GET('/v1/usage', { params: { query: { ownerId } } })),
  });
  const cost = useQuery({
    queryKey: ['cost', ownerId],
    queryFn: () => ok(api.GET('/v1/workspaces/{ownerId}/cost-estimate', { params: { path: { ownerId } } })),
  });
  const u = usage.data;
  return (
    <>
      <h1>Usage</h1>
      <ErrorText error={usage.error ?? cost.error} />
      {cost.data && (
        <div className="row wrap cards">
          <div className="card">
            <p className="muted">Cost so far</p>
            <p className="figure">{money(cost.data.costSoFar, cost.data.currency)}</p>
          </div>
          <div className="card">
            <p className="muted">Projected by {new Date(cost.data.periodEnd).toLocaleDateString()}</p>
            <p className="figure">{money(cost.data.projectedCost, cost.data.currency)}</p>
          </div>
        </div>
      )}
      {u && (
        <>
          <p className="muted">
            From {new Date(u.startTime).toLocaleDateString()} to {new Date(u.endTime).toLocaleString()}
          </p>
          <div className="table-wrap">
            <table aria-label="Usage per resource">
              <thead>
                <tr>
                  <th scope="col">Resource</th>
                  <th scope="col">Instance hours</th>
                  <th scope="col">Build minutes</th>
                  <th scope="col">Bandwidth</th>
                  <th scope="col">Datastore hours</th>
                </tr>
              </thead>
              <tbody>
                {u.resources.map((r) => (
                  <tr key={r.resourceId}>
                    <td>{r.name ?? r.resourceId}</td>
                    <td>{r.instanceHours.toFixed(2)}</td>
                    <td>{r.buildMinutes.toFixed(1)}</td>
                    <td>{bytes(r.bandwidthBytes)}</td>
                    <td>{r.datastoreHours.toFixed(2)}</td>
                  </tr>
                ))}
              </tbody>
              <tfoot>
                <tr>
                  <th scope="row">Total</th>
                  <td>{u.totals.instanceHours.toFixed(2)}</td>
                  <td>{u.totals.buildMinutes.toFixed(1)}</td>
                  <td>{bytes(u.totals.bandwidthBytes)}</td>
                  <td>{u.totals.datastoreHours.toFixed(2)}</td>
                </tr>
              </tfoot>
            </table>
          </div>
        </>
      )}
    </>
  );
}
