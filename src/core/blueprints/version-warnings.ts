import type { RuntimeTools } from '../../runtime/types.js';
import type { VersionAsked } from './validate.js';
import type { BlueprintWarning } from './yaml-walk.js';

/** What a validation may ask the runtime about a file's versions (the registry, the host's Pythons). */
export type VersionTools = Pick<RuntimeTools, 'checkNode' | 'python'>;

/** The registry is asked for at most this long in a validation: a file is still answered when it is unreachable. */
const CHECK_TIMEOUT_MS = 5000;
/** Versions checked per file; a file may name NODE_VERSION on every service, the answer is the same. */
const MAX_CHECKED = 20;

/** Which runtimes a variable picks the version of here (undefined: set in an env group, for whichever links it). */
const APPLIES: Record<string, (runtime: string | undefined) => boolean> = {
  NODE_VERSION: (r) => r === undefined || r === 'node',
  PYTHON_VERSION: (r) => r === undefined || r === 'python',
};

/** Why `asked` cannot be honoured here, or undefined when it can. */
async function problem(asked: VersionAsked, tools: VersionTools): Promise<string | undefined> {
  const { key, value, runtime } = asked;
  const applies = APPLIES[key];
  if (!applies)
    return `${key} is not honoured here: builds and instances run the host's ${key.split('_')[0]!.toLowerCase()} (docs/deploys.md, "Runtime versions")`;
  if (!applies(runtime))
    return `${key} is not honoured for runtime ${runtime} here: only ${key === 'NODE_VERSION' ? 'Node services and static sites' : 'Python services'} pick a version`;
  const cannot = `${key} ${JSON.stringify(value)} cannot be honoured here`;
  try {
    if (key === 'NODE_VERSION') {
      await tools.checkNode(value, AbortSignal.timeout(CHECK_TIMEOUT_MS));
      return undefined;
    }
    const python = await tools.python(value);
    return python.note
      ? `${key} ${JSON.stringify(value)}: builds will run ${python.version} (${python.note})`
      : undefined;
  } catch (err) {
    const why = (err as Error).name === 'TimeoutError' ? 'the registry did not answer in time' : (err as Error).message;
    return `${cannot}: ${why}`;
  }
}

/**
 * The warnings of a valid file's version variables that this Slipway cannot honour (docs/blueprints.md): a Node.js
 * release the registry does not have, a Python line the host lacks, a runtime whose version is never picked here.
 * Never errors: Render would take the file.
 */
export async function versionWarnings(
  versions: VersionAsked[],
  tools: VersionTools | undefined,
): Promise<BlueprintWarning[]> {
  if (!tools) return [];
  const checked = await Promise.all(
    versions.slice(0, MAX_CHECKED).map(async (asked) => {
      const warning = await problem(asked, tools);
      const { path, line, column, resource } = asked;
      return warning ? [{ path, line, column, resource, warning }] : [];
    }),
  );
  return checked.flat();
}
