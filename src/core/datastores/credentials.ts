import { randomBytes } from 'node:crypto';
import { AppError, conflict } from '../../lib/errors.js';
import type { PostgresCredential } from '../../provisioners/types.js';
import type { DatastoreRow } from '../../store/repos/datastores.js';
import type { Datastores } from './datastores.js';
import { servingPostgres } from './postgres-access.js';

/** Postgres identifiers Slipway makes (lower-case: never quoted in a user's psql), and names a credential may not take. */
const USERNAME = /^[a-z_][a-z0-9_]{0,62}$/;
const RESERVED = /^(postgres|root|public|admin|template[01]|pg_.*|slipway.*)$/;
/** Users of one datastore besides its default one: roles are the server's (a shared cluster's), so never unbounded. */
export const CREDENTIALS_MAX = 20;

const invalidUsername = (message: string) =>
  new AppError('validation_failed', 'invalid username', [{ field: 'username', message }]);

/**
 * Extra login roles of a Postgres datastore (Render's `/credentials`). Each acts as the datastore's own user (full
 * read/write on its database); its password is generated, returned once by `create`, and kept nowhere. The
 * datastore's own user is the `default` one and cannot be dropped.
 */
export function createPostgresCredentials(datastores: Pick<Datastores, 'driver'>) {
  return {
    /** The default user first (created with the datastore), then the others, oldest first. */
    async list(row: DatastoreRow): Promise<PostgresCredential[]> {
      const { access, spec, placement } = servingPostgres(datastores, row);
      const found = await access.listCredentials(spec, placement);
      return found.map((c) => (c.default ? { ...c, createdAt: row.createdAt.toISOString() } : c));
    },

    async create(row: DatastoreRow, username: string) {
      if (!USERNAME.test(username))
        throw invalidUsername('must be 1-63 lower-case letters, digits and _, not starting with a digit');
      if (RESERVED.test(username) || username === row.databaseUser) throw invalidUsername(`"${username}" is reserved`);
      const { access, spec, placement } = servingPostgres(datastores, row);
      if ((await access.listCredentials(spec, placement)).filter((c) => !c.default).length >= CREDENTIALS_MAX)
        throw conflict(`a postgres instance has at most ${CREDENTIALS_MAX} users besides its default one`);
      const password = randomBytes(24).toString('base64url');
      await access.createCredential(spec, placement, { username, password });
      return { username, password, default: false, createdAt: new Date().toISOString(), openConnections: 0 };
    },

    async remove(row: DatastoreRow, username: string): Promise<void> {
      if (!USERNAME.test(username)) throw invalidUsername('not a Postgres user name Slipway makes');
      if (username === row.databaseUser)
        throw conflict('the default credential cannot be deleted: it owns the database and services connect with it');
      const { access, spec, placement } = servingPostgres(datastores, row);
      await access.dropCredential(spec, placement, username);
    },
  };
}
export type PostgresCredentials = ReturnType<typeof createPostgresCredentials>;
