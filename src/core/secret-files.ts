import { AppError, notFound } from '../lib/errors.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { Repos, Transact } from '../store/repos/index.js';
import type { SealedFile, SecretFileRepo } from '../store/repos/secret-files.js';
import { MASKED_VALUE } from './services/env-view.js';

/** Render's secretFile: a file name and its content (text). */
export interface SecretFile {
  name: string;
  content: string;
}

/** Bounds on one owner's files (a service's own, or an env group's): docs/deploys.md, "Secret files". */
export const SECRET_FILE_LIMITS = {
  /** UTF-8 bytes of one file's content. */
  fileBytes: 1024 * 1024,
  files: 50,
  /** UTF-8 bytes of all of one owner's files together. */
  totalBytes: 4 * 1024 * 1024,
  nameLength: 255,
};
/** A plain file name: no `/`, no NUL, nothing a shell or a path would read as more than a name; not `.` or `..`. */
const NAME = /^[A-Za-z0-9._-]+$/;

function nameProblem(name: string): string | undefined {
  if (name.length === 0 || name.length > SECRET_FILE_LIMITS.nameLength)
    return `must be 1–${SECRET_FILE_LIMITS.nameLength} characters`;
  if (!NAME.test(name)) return 'must be a file name: letters, digits, ".", "_" and "-" only (no "/")';
  if (name === '.' || name === '..') return 'must be a file name, not "." or ".."';
  return undefined;
}

type Problem = { field: string; message: string };
const invalid = (details: Problem[]) => new AppError('validation_failed', 'invalid secret files', details);

/** Checks one owner's whole set: names, sizes, count and total (the routes' bodies are checked here, once). */
function checkFiles(files: SecretFile[], at: (i: number) => string): void {
  const details: Problem[] = [];
  const seen = new Set<string>();
  let total = 0;
  files.forEach((f, i) => {
    const problem = nameProblem(f.name);
    if (problem) details.push({ field: `${at(i)}.name`, message: problem });
    else if (seen.has(f.name)) details.push({ field: `${at(i)}.name`, message: `${f.name} appears twice` });
    seen.add(f.name);
    const bytes = Buffer.byteLength(f.content, 'utf8');
    total += bytes;
    if (bytes > SECRET_FILE_LIMITS.fileBytes)
      details.push({ field: `${at(i)}.content`, message: `larger than ${SECRET_FILE_LIMITS.fileBytes} bytes` });
    // A masked read written back would replace the secret with the mask (as for env var values).
    if (f.content === MASKED_VALUE)
      details.push({ field: `${at(i)}.content`, message: `${MASKED_VALUE} is how a secret reads below admin` });
  });
  if (files.length > SECRET_FILE_LIMITS.files)
    details.push({ field: 'secretFiles', message: `more than ${SECRET_FILE_LIMITS.files} files` });
  if (total > SECRET_FILE_LIMITS.totalBytes)
    details.push({ field: 'secretFiles', message: `more than ${SECRET_FILE_LIMITS.totalBytes} bytes in all` });
  if (details.length) throw invalid(details);
}

/** Secret files of one kind of owner, sealed with the secret box at rest (as env var values are). */
function ownerFiles(pick: (r: Repos) => SecretFileRepo, deps: { repos: Repos; box: SecretBox; transact: Transact }) {
  const { box, transact } = deps;
  const repo = pick(deps.repos);
  const open = (f: SealedFile): SecretFile => ({ name: f.name, content: box.open(f.sealedContent) });
  const seal = (f: SecretFile): SealedFile => ({ name: f.name, sealedContent: box.seal(f.content) });
  return {
    list: async (ownerId: string, page?: { after?: string; limit?: number }) =>
      (await repo.list(ownerId, page)).map(open),
    async get(ownerId: string, name: string): Promise<SecretFile> {
      const found = await repo.get(ownerId, name);
      if (!found) throw notFound(`secret file ${name}`);
      return open(found);
    },
    async replace(ownerId: string, files: SecretFile[]): Promise<void> {
      checkFiles(files, (i) => `[${i}]`);
      await transact((tx) => pick(tx).replace(ownerId, files.map(seal)));
    },
    /** Adds or replaces one file; the owner's whole set, with it, must stay within the limits. */
    async put(ownerId: string, file: SecretFile): Promise<SecretFile> {
      return transact(async (tx) => {
        const others = (await pick(tx).list(ownerId)).filter((f) => f.name !== file.name).map(open);
        const problem = nameProblem(file.name);
        if (problem) throw invalid([{ field: 'secretFileName', message: problem }]);
        checkFiles([...others, file], (i) => (i === others.length ? 'body' : `secretFiles[${i}]`));
        await pick(tx).put(ownerId, seal(file));
        return file;
      });
    },
    async delete(ownerId: string, name: string): Promise<void> {
      if (!(await repo.delete(ownerId, name))) throw notFound(`secret file ${name}`);
    },
  };
}

/**
 * Secret files (Render's): a service's own and its env groups'. Each instance and pre-deploy run of a deploy gets
 * them at /etc/secrets/<name>, read when it starts, as its environment is (docs/deploys.md, "Secret files").
 */
export function createSecretFiles(deps: { repos: Repos; transact: Transact; box: SecretBox }) {
  const { repos } = deps;
  const service = ownerFiles((r) => r.secretFiles, deps);
  const group = ownerFiles((r) => r.envGroupSecretFiles, deps);
  return {
    service,
    group,
    /** What an instance of the service sees: its groups' files in link order, then its own (later wins on a name). */
    async resolved(serviceId: string): Promise<SecretFile[]> {
      const files = new Map<string, SecretFile>();
      for (const g of await repos.envGroups.groupsOf(serviceId))
        for (const f of await group.list(g.id)) files.set(f.name, f);
      for (const f of await service.list(serviceId)) files.set(f.name, f);
      return [...files.values()];
    },
  };
}
export type SecretFiles = ReturnType<typeof createSecretFiles>;
