import { conflict, notFound } from '../lib/errors.js';
import { newId } from '../lib/ids.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { RegistryCredentialRegistry } from '../model/enums.js';
import { registryCredentialIdOf } from '../model/services.js';
import { isUniqueViolation } from '../store/db.js';
import type { Repos } from '../store/repos/index.js';
import type { RegistryCredentialQuery, RegistryCredentialRow } from '../store/repos/registry-credentials.js';
import type { ServiceRow } from '../store/repos/services.js';

/** A credential as the API may show it: everything but the token, which is never read back once written. */
export type RegistryCredential = Omit<RegistryCredentialRow, 'sealedToken'>;

export interface RegistryCredentialInput {
  registry: RegistryCredentialRegistry;
  name: string;
  username: string;
  authToken: string;
}

/** What a pull or a build signs in to a registry with (the deploy engine's, never an API answer). */
export interface RegistryLogin {
  registry: RegistryCredentialRegistry;
  /** The registry's host; '' where Render takes none (GOOGLE_ARTIFACT, AWS_ECR): the engine uses the image's host. */
  registryHost: string;
  username: string;
  authToken: string;
}

/** Where each registry answers: Render's credential has no host field, so the hosted registries are fixed. */
export const REGISTRY_HOSTS: Record<RegistryCredentialRegistry, string> = {
  GITHUB: 'ghcr.io',
  GITLAB: 'registry.gitlab.com',
  DOCKER: 'docker.io',
  GOOGLE_ARTIFACT: '',
  AWS_ECR: '',
};

/** A service as far as its credential goes. */
type CredentialUser = Pick<ServiceRow, 'workspaceId' | 'details'>;

/** The row without its sealed token: nothing above core sees even the ciphertext. */
const shown = ({ sealedToken: _sealed, ...credential }: RegistryCredentialRow): RegistryCredential => credential;

/**
 * Render's registry credentials: a workspace's sign-ins to private registries, the token sealed at rest with the
 * secret box env vars use, and opened only for the deploy engine (`credentialFor`). One a service pulls or builds
 * with cannot be deleted.
 */
export function createRegistryCredentials(deps: {
  repos: Pick<Repos, 'registryCredentials' | 'services'>;
  box: SecretBox;
}) {
  const { repos, box } = deps;
  const repo = repos.registryCredentials;
  const named =
    (name: string) =>
    (err: unknown): never => {
      throw isUniqueViolation(err)
        ? conflict(`a registry credential named "${name}" already exists in this workspace`)
        : err;
    };
  const sealed = (input: RegistryCredentialInput) => ({
    registry: input.registry,
    name: input.name,
    username: input.username,
    sealedToken: box.seal(input.authToken),
  });

  return {
    /** 404 for an unknown id; the caller checks the workspace (http/guard.ts). */
    async get(id: string): Promise<RegistryCredential> {
      const row = await repo.get(id);
      if (!row) throw notFound('registry credential');
      return shown(row);
    },
    list: async (q: RegistryCredentialQuery): Promise<RegistryCredential[]> => (await repo.list(q)).map(shown),
    async create(workspaceId: string, input: RegistryCredentialInput): Promise<RegistryCredential> {
      const row = await repo
        .insert({ id: newId('registryCredential'), workspaceId, ...sealed(input) })
        .catch(named(input.name));
      return shown(row);
    },
    /** Render's PATCH replaces every field, the token too; services pick the change up on their next deploy. */
    async update(credential: RegistryCredential, input: RegistryCredentialInput): Promise<RegistryCredential> {
      const row = await repo.update(credential.id, sealed(input)).catch(named(input.name));
      if (!row) throw notFound('registry credential');
      return shown(row);
    },
    /** 409 while a service of its workspace pulls or builds with it (its `docker` or `image` details name it). */
    async remove(credential: RegistryCredential): Promise<void> {
      const users = await repos.services.usingRegistryCredential(credential.workspaceId, credential.id);
      if (users.length)
        throw conflict(
          `registry credential ${credential.id} is used by ${users.map((s) => `${s.name} (${s.id})`).join(', ')}; ` +
            'point those services at another credential first',
        );
      await repo.delete(credential.id);
    },
    /**
     * Render's `registryCredential.name` for each of `services`, read in one query for a whole page; undefined (and
     * no query) when none names a credential. The lookup answers only a credential of the service's own workspace:
     * a service may name another's id (its deploys then fail), and must not learn that credential's name.
     */
    async namesFor(services: readonly CredentialUser[]) {
      const ids = new Set(services.map((s) => registryCredentialIdOf(s.details)).filter((id) => id !== undefined));
      if (!ids.size) return undefined;
      const byId = new Map((await repo.namesOf([...ids])).map((row) => [row.id, row]));
      return (service: CredentialUser): string | undefined => {
        const found = byId.get(registryCredentialIdOf(service.details) ?? '');
        return found?.workspaceId === service.workspaceId ? found.name : undefined;
      };
    },
    /**
     * The credential `id` of `workspaceId`, its token opened, for the deploy engine to sign in to the registry with;
     * undefined when there is no such credential in that workspace.
     */
    async credentialFor(workspaceId: string, id: string): Promise<RegistryLogin | undefined> {
      const row = await repo.get(id);
      if (!row || row.workspaceId !== workspaceId) return undefined;
      return {
        registry: row.registry,
        registryHost: REGISTRY_HOSTS[row.registry],
        username: row.username,
        authToken: box.open(row.sealedToken),
      };
    },
  };
}
export type RegistryCredentials = ReturnType<typeof createRegistryCredentials>;
