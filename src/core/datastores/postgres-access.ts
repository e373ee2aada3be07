import { AppError, conflict } from '../../lib/errors.js';
import type { Placement, PostgresAccess, PostgresSpec } from '../../provisioners/types.js';
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
export function servingPostgres(datastores: Pick<Datastores, 'driver'>, row: DatastoreRow): ServingPostgres {
  if (row.suspended) throw conflict('the postgres instance is suspended; resume it first');
  const placement = placementOf(row);
  const provisioner = datastores.driver.provisioner(row);
  if (!placement || row.status !== 'available')
    throw conflict(`the postgres instance is ${row.status}; try again once it is available`);
  const p = provisioner as Partial<PostgresAccess> | undefined;
  if (!p?.dump || !p.listCredentials || !p.createCredential || !p.dropCredential)
    throw new AppError('not_configured', `the ${row.provisioner} Postgres provisioner has no credentials or exports`);
  return { access: p as PostgresAccess, spec: datastores.driver.spec(row) as PostgresSpec, placement };
}
