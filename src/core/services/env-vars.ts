import { randomBytes } from 'node:crypto';
import { AppError, notFound } from '../../lib/errors.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { EnvVarRepo, SealedVar } from '../../store/repos/env-vars.js';
import type { EnvVarRef } from '../../store/schema/index.js';
import { MASKED_VALUE } from './env-view.js';

type RefInput = { id: string; property: EnvVarRef['property'] };
/** Render's envVarInput: a value, or `generateValue: true` for a random secret; or a datastore reference (Render's blueprint `fromDatabase`). */
export type EnvVarInput =
  | { key: string; value: string }
  | { key: string; generateValue: boolean }
  | { key: string; fromDatabase: RefInput }
  | { key: string; fromKeyValue: RefInput };

/** A variable as stored: a value, or a reference resolved when an environment is built. */
export type CheckedVar =
  { key: string; value: string; ref?: undefined } | { key: string; value?: undefined; ref: EnvVarRef };

/** Datastore references: checked when set, resolved when read (core/datastores). */
export interface RefPort {
  /** Throws a 4xx unless the reference names a datastore of this workspace that has the property. */
  check(workspaceId: string, ref: EnvVarRef): Promise<void>;
  /** The value right now; throws when the datastore is gone or not yet created. */
  resolve(ref: EnvVarRef): Promise<string>;
}

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_VALUE_LENGTH = 64 * 1024;

/** Keys the platform sets for every instance (docs/architecture.md, "Platform environment"); a service cannot override them. */
export const isReservedKey = (key: string) => key === 'PORT' || key === 'SLIPWAY' || key.startsWith('SLIPWAY_');

export function checkEnvVars(inputs: EnvVarInput[]): CheckedVar[] {
  const seen = new Set<string>();
  const details: Array<{ field: string; message: string }> = [];
  const out = inputs.map((input, i) => {
    const field = `envVars[${i}].key`;
    if (!KEY.test(input.key) || input.key.length > 256)
      details.push({ field, message: 'must be letters, digits and _, not starting with a digit (max 256)' });
    else if (isReservedKey(input.key)) details.push({ field, message: `${input.key} is set by the platform` });
    else if (seen.has(input.key)) details.push({ field, message: `${input.key} appears twice` });
    seen.add(input.key);
    if ('fromDatabase' in input) return { key: input.key, ref: { kind: 'postgres' as const, ...input.fromDatabase } };
    if ('fromKeyValue' in input) return { key: input.key, ref: { kind: 'keyValue' as const, ...input.fromKeyValue } };
    if ('value' in input) {
      if (input.value.length > MAX_VALUE_LENGTH)
        details.push({ field: `envVars[${i}].value`, message: `longer than ${MAX_VALUE_LENGTH} characters` });
      // A masked read written back (a developer's PUT of the whole set) would replace every secret with the mask.
      if (input.value === MASKED_VALUE)
        details.push({
          field: `envVars[${i}].value`,
          message: `${MASKED_VALUE} is how a secret reads below admin, not a value: send the value, or change one variable with PUT …/env-vars/<key>`,
        });
      return { key: input.key, value: input.value };
    }
    if (input.generateValue !== true)
      details.push({ field: `envVars[${i}].generateValue`, message: 'must be true, or give a value' });
    return { key: input.key, value: randomBytes(24).toString('base64url') };
  });
  if (details.length) throw new AppError('validation_failed', 'invalid environment variables', details);
  return out;
}

/**
 * Variables of one owner (a service, or an env group), sealed with the secret box at rest.
 * Writes go in two steps, `prepare` (validate, check references, seal) then `write`, so a caller
 * can prepare outside a transaction and write inside it.
 */
export function createEnvVars(deps: { repo: EnvVarRepo; box: SecretBox; refs: RefPort }) {
  const { repo, box, refs } = deps;
  const view = (v: { key: string; value: string; ref?: EnvVarRef | null }) => ({
    key: v.key,
    value: v.value,
    ...(v.ref
      ? { [v.ref.kind === 'postgres' ? 'fromDatabase' : 'fromKeyValue']: { id: v.ref.id, property: v.ref.property } }
      : {}),
  });
  /** strict: a reference that cannot be resolved throws (building an environment); else it reads as ''. */
  const open = async (row: SealedVar, strict: boolean) => {
    if (!row.ref) return view({ key: row.key, value: box.open(row.sealedValue) });
    const value = await refs.resolve(row.ref).catch((err: unknown) => {
      if (strict) throw new AppError('conflict', `${row.key}: ${(err as Error).message}`);
      return '';
    });
    return view({ key: row.key, value, ref: row.ref });
  };
  async function prepare(workspaceId: string, inputs: EnvVarInput[]): Promise<SealedVar[]> {
    const checked = checkEnvVars(inputs);
    for (const v of checked) if (v.ref) await refs.check(workspaceId, v.ref);
    return checked.map((v) =>
      v.ref ? { key: v.key, sealedValue: '', ref: v.ref } : { key: v.key, sealedValue: box.seal(v.value), ref: null },
    );
  }
  return {
    prepare,
    /** The variables with references resolved; `strict` for an environment an app will get. */
    list: async (ownerId: string, strict = false) =>
      Promise.all((await repo.list(ownerId)).map((r) => open(r, strict))),
    /** Replaces the set; pass a transaction's repo for atomicity. */
    write: (ownerId: string, prepared: SealedVar[], txRepo: EnvVarRepo = repo) => txRepo.replace(ownerId, prepared),
    async replace(owner: { id: string; workspaceId: string }, inputs: EnvVarInput[]) {
      await repo.replace(owner.id, await prepare(owner.workspaceId, inputs));
    },
    async get(ownerId: string, key: string) {
      const row = await repo.get(ownerId, key);
      if (!row) throw notFound(`environment variable ${key}`);
      return open(row, false);
    },
    async put(owner: { id: string; workspaceId: string }, input: EnvVarInput) {
      const [v] = await prepare(owner.workspaceId, [input]);
      await repo.put(owner.id, v!);
      return open(v!, false);
    },
    async delete(ownerId: string, key: string) {
      if (!(await repo.delete(ownerId, key))) throw notFound(`environment variable ${key}`);
    },
  };
}
export type EnvVars = ReturnType<typeof createEnvVars>;
