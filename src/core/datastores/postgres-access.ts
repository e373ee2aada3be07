import { AppError, conflict } from '../../lib/errors.js';
import type { KeyValueDump, KeyValueSpec, Placement, PostgresAccess, PostgresSpec } from '../../provisioners/types.js';
import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { Datastores } from './datastores.js';
import { placementOf } from './reconciler.js';

export interface ServingPostgres {
  access: PostgresAccess;
  spec: PostgresSpec;
  placement: Placement;
}

/**
 * A Postgres datastore that serves now, with what its provisioner offers beyond the lifecycle (credentials,
 * exports): 409 while it is suspended or not available, 501 where its provisioner has no such calls.
 */
/** The placement of a datastore that serves now: 409 while it is suspended or not available. */
function servingPlacement(row: DatastoreRow): Placement {
  const what = row.kind === 'postgres' ? 'postgres instance' : 'key-value instance';
  if (row.suspended) throw conflict(`the ${what} is suspended; resume it first`);
  const placement = placementOf(row);
  if (!placement || row.status !== 'available')
    throw conflict(`the ${what} is ${row.status}; try again once it is available`);
  return placement;
}

export function servingPostgres(datastores: Pick<Datastores, 'driver'>, row: DatastoreRow): ServingPostgres {
  const placement = servingPlacement(row);
  const provisioner = datastores.driver.provisioner(row);
  const p = provisioner as Partial<PostgresAccess> | undefined;
  if (!p?.dump || !p.listCredentials || !p.createCredential || !p.dropCredential)
    throw new AppError('not_configured', `the ${row.provisioner} Postgres provisioner has no credentials or exports`);
  return { access: p as PostgresAccess, spec: datastores.driver.spec(row) as PostgresSpec, placement };
}

/**
 * How to write a serving datastore's data to a file, for an export: `pg_dump -Fc` of a Postgres database, an RDB
 * snapshot of a key-value server. 409 while it does not serve, 501 where its provisioner cannot (cluster, shared).
 */
export function servingDump(
  datastores: Pick<Datastores, 'driver'>,
  row: DatastoreRow,
): (file: string) => Promise<void> {
  if (row.kind === 'postgres') {
    const { access, spec, placement } = servingPostgres(datastores, row);
    return (file) => access.dump(spec, placement, file);
  }
  const placement = servingPlacement(row);
  const p = datastores.driver.provisioner(row) as Partial<KeyValueDump> | undefined;
  if (!p?.dump)
    throw new AppError(
      'not_configured',
      `the ${row.provisioner} key-value provisioner has no exports (the server is not Slipway's)`,
    );
  const dump = p.dump.bind(p);
  const spec = datastores.driver.spec(row) as KeyValueSpec;
  return (file) => dump(spec, placement, file);
}
