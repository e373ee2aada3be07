import { randomBytes } from 'node:crypto';
import { AppError, notFound } from '../../lib/errors.js';
import type { SecretBox } from '../../lib/secret-box.js';
import type { EnvVarRepo } from '../../store/repos/env-vars.js';

/** Render's envVarInput: a value, or `generateValue: true` for a random secret. */
export type EnvVarInput = { key: string; value: string } | { key: string; generateValue: boolean };

const KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_VALUE_LENGTH = 64 * 1024;

/** Keys the platform sets for every instance (DESIGN.md §8); a service cannot override them. */
export const isReservedKey = (key: string) => key === 'PORT' || key === 'SLIPWAY' || key.startsWith('SLIPWAY_');

export function checkEnvVars(inputs: EnvVarInput[]): Array<{ key: string; value: string }> {
  const seen = new Set<string>();
  const details: Array<{ field: string; message: string }> = [];
  const out = inputs.map((input, i) => {
    const field = `envVars[${i}].key`;
    if (!KEY.test(input.key) || input.key.length > 256) details.push({ field, message: 'must be letters, digits and _, not starting with a digit (max 256)' });
    else if (isReservedKey(input.key)) details.push({ field, message: `${input.key} is set by the platform` });
    else if (seen.has(input.key)) details.push({ field, message: `${input.key} appears twice` });
    seen.add(input.key);
    if ('value' in input) {
      if (input.value.length > MAX_VALUE_LENGTH) details.push({ field: `envVars[${i}].value`, message: `longer than ${MAX_VALUE_LENGTH} characters` });
      return { key: input.key, value: input.value };
    }
    if (input.generateValue !== true) details.push({ field: `envVars[${i}].generateValue`, message: 'must be true, or give a value' });
    return { key: input.key, value: randomBytes(24).toString('base64url') };
  });
  if (details.length) throw new AppError('validation_failed', 'invalid environment variables', details);
  return out;
}

/** A service's own variables, sealed with the secret box at rest. */
export function createEnvVars(deps: { repo: EnvVarRepo; box: SecretBox }) {
  const { repo, box } = deps;
  const open = (rows: Awaited<ReturnType<EnvVarRepo['list']>>) => rows.map((r) => ({ key: r.key, value: box.open(r.sealedValue) }));
  return {
    list: async (serviceId: string) => open(await repo.list(serviceId)),
    /** Replaces the set; call within a transaction's repo for atomicity. */
    replace: (serviceId: string, inputs: EnvVarInput[], txRepo: EnvVarRepo = repo) =>
      txRepo.replace(serviceId, checkEnvVars(inputs).map((v) => ({ key: v.key, sealedValue: box.seal(v.value) }))),
    async get(serviceId: string, key: string) {
      const row = await repo.get(serviceId, key);
      if (!row) throw notFound(`environment variable ${key}`);
      return { key, value: box.open(row.sealedValue) };
    },
    async put(serviceId: string, input: EnvVarInput) {
      const [v] = checkEnvVars([input]);
      await repo.put(serviceId, v!.key, box.seal(v!.value));
      return v!;
    },
    async delete(serviceId: string, key: string) {
      if (!(await repo.delete(serviceId, key))) throw notFound(`environment variable ${key}`);
    },
  };
}
export type EnvVars = ReturnType<typeof createEnvVars>;
