import { Type } from '@sinclair/typebox';
import type { RegistryCredential } from '../../core/registry-credentials.js';
import { REGISTRY_CREDENTIAL_REGISTRIES } from '../../model/enums.js';
import { literalUnion, Name, Timestamp } from './common.js';

export const Registry = literalUnion(REGISTRY_CREDENTIAL_REGISTRIES, {
  description: 'The registry to use this credential with',
});

/** Render's create and update body (update replaces every field). The token is write-only. */
export const RegistryCredentialInput = {
  registry: Registry,
  name: Name,
  username: Type.String({ minLength: 1, maxLength: 255 }),
  // A Google service account's JSON key (GOOGLE_ARTIFACT) is about 2.5 KiB; ECR and PATs far less.
  authToken: Type.String({ minLength: 1, maxLength: 16 * 1024, description: 'Write-only: never returned' }),
};
/** Above the largest valid body, far below the global limit: a bigger one is a 413 before it is parsed. */
export const REGISTRY_CREDENTIAL_BODY_LIMIT = 64 * 1024;

/** Render's `registryCredential`: never the token. */
export const RegistryCredentialBody = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    registry: Registry,
    username: Type.String(),
    updatedAt: Timestamp,
  },
  { title: 'registryCredential' },
);
export const registryCredentialBody = (c: RegistryCredential) => ({
  id: c.id,
  name: c.name,
  registry: c.registry,
  username: c.username,
  updatedAt: c.updatedAt.toISOString(),
});
