import { linearRegex, type LinearRegex } from '../../lib/linear-regex.js';
import type { BuildFilter } from '../../model/services.js';

/**
 * A glob as Render's buildFilter writes them (`src/**`, `*.md`, `docs/?`), compiled to RE2 (lib/linear-regex.ts): `**` crosses
 * slashes, `*` and `?` do not. RE2 runs in time linear in the path, so no tenant's pattern makes a push expensive
 * (a backtracking glob library could be made to).
 */
function compileGlob(glob: string): LinearRegex {
  let source = '^';
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!;
    if (c === '*' && glob[i + 1] === '*') {
      i++;
      if (glob[i + 1] === '/') {
        i++;
        source += '(?:.*/)?'; // `a/**/b` matches `a/b` too
      } else source += '.*';
    } else if (c === '*') source += '[^/]*';
    else if (c === '?') source += '[^/]';
    else source += c.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  return linearRegex(`${source}$`);
}

/**
 * Render's rule: a push deploys when one of its changed files counts, that is matches `paths` (any file, when
 * `paths` is empty) and no `ignoredPaths`. Paths are relative to the repository's root.
 */
export function pushCounts(filter: BuildFilter | undefined, changed: string[]): boolean {
  if (!filter || (filter.paths.length === 0 && filter.ignoredPaths.length === 0)) return true;
  const paths = filter.paths.map(compileGlob);
  const ignored = filter.ignoredPaths.map(compileGlob);
  return changed.some(
    (file) => (paths.length === 0 || paths.some((p) => p.test(file))) && !ignored.some((p) => p.test(file)),
  );
}
