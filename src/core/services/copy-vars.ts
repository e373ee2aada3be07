import type { ServiceRow } from '../../store/repos/services.js';
import type { EnvVarInput, EnvVars } from './env-vars.js';

type Ref = Extract<EnvVarInput, { fromDatabase: unknown }>['fromDatabase'];

/** A service's env vars as the input of a copy of it (a preview): a datastore reference stays one, the rest are values. */
export async function copyVars(envVars: Pick<EnvVars, 'list'>, parent: ServiceRow): Promise<EnvVarInput[]> {
  return (await envVars.list(parent.id)).map((v): EnvVarInput => {
    const refs = v as { fromDatabase?: Ref; fromKeyValue?: Ref };
    if (refs.fromDatabase) return { key: v.key, fromDatabase: refs.fromDatabase };
    if (refs.fromKeyValue) return { key: v.key, fromKeyValue: refs.fromKeyValue };
    return { key: v.key, value: v.value };
  });
}
