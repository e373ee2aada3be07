import { readdirSync } from 'node:fs';
import path from 'node:path';
import { readPackageJson, readProjectFile } from './package-managers.js';

/** A version a deploy asks for, and where it asked (the build log says both). */
export interface VersionRequest {
  value: string;
  from: string;
}

/** The first line of a version file that says something (`.nvmrc` may carry comments after `#`). */
function versionFile(file: string): string | undefined {
  const text = readProjectFile(file);
  const line = text
    ?.split('\n')
    .map((l) => l.replace(/#.*/, '').trim())
    .find(Boolean);
  return line && line.length <= 100 ? line : undefined;
}

/** The variable when set to something, as a request. */
function fromEnv(env: Record<string, string | undefined>, name: string): VersionRequest | undefined {
  const value = env[name]?.trim();
  return value ? { value, from: name } : undefined;
}

/** `name` in the service's root dir, else at the repository's root (where Render reads it). */
function fromFile(dirs: string[], name: string): VersionRequest | undefined {
  for (const dir of dirs) {
    const value = versionFile(path.join(dir, name));
    if (value) return { value, from: name };
  }
  return undefined;
}

/** Dirs looked through for a package.json below the root, breadth first: how deep, and how many at most. */
const SEARCH_DEPTH = 3;
const SEARCH_DIRS = 200;

/** The first package.json below `root` (breadth first, by name; never node_modules or a dot dir), as Render looks. */
function firstPackageJsonBelow(root: string): string | undefined {
  let level = [root];
  let seen = 0;
  for (let depth = 0; depth < SEARCH_DEPTH && level.length > 0; depth++) {
    const next: string[] = [];
    for (const dir of level) {
      let names: string[];
      try {
        names = readdirSync(dir, { withFileTypes: true })
          .filter((e) => e.isDirectory() && e.name !== 'node_modules' && !e.name.startsWith('.'))
          .map((e) => e.name)
          .sort();
      } catch {
        continue;
      }
      for (const name of names) {
        if (++seen > SEARCH_DIRS) return undefined;
        const sub = path.join(dir, name);
        if (readPackageJson(sub)) return sub;
        next.push(sub);
      }
    }
    level = next;
  }
  return undefined;
}

/** package.json's engines.node: the root dir's, else the first one in a subdirectory. */
function fromEngines(workDir: string): VersionRequest | undefined {
  const dir = readPackageJson(workDir) ? workDir : firstPackageJsonBelow(workDir);
  if (!dir) return undefined;
  const engines = (readPackageJson(dir)?.pkg as { engines?: { node?: unknown } }).engines;
  const value = typeof engines?.node === 'string' ? engines.node.trim() : '';
  if (!value || value.length > 100) return undefined;
  const where = path.relative(workDir, path.join(dir, 'package.json'));
  return { value, from: `engines.node in ${where}` };
}

/**
 * The Node.js version a build asks for, in Render's order (render.com/docs/node-version): the NODE_VERSION variable,
 * `.node-version`, `.nvmrc`, then package.json's `engines.node`. Files are read in the service's root dir, then at the
 * repository's root; undefined when nothing asks (the host's Node runs).
 */
export function nodeVersionRequest(
  env: Record<string, string | undefined>,
  workDir: string,
  repoRoot: string,
): VersionRequest | undefined {
  const dirs = [...new Set([workDir, repoRoot])];
  return (
    fromEnv(env, 'NODE_VERSION') ?? fromFile(dirs, '.node-version') ?? fromFile(dirs, '.nvmrc') ?? fromEngines(workDir)
  );
}

/**
 * The Python version a build asks for, in Render's order (render.com/docs/python-version): the PYTHON_VERSION variable
 * (`3.13.5`), then `.python-version` (`3.13` or `3.13.5`); undefined: the host's python3.
 */
export function pythonVersionRequest(
  env: Record<string, string | undefined>,
  workDir: string,
  repoRoot: string,
): VersionRequest | undefined {
  return fromEnv(env, 'PYTHON_VERSION') ?? fromFile([...new Set([workDir, repoRoot])], '.python-version');
}
