import { closest, distance } from 'fastest-levenshtein';
import { isMap, isScalar, isSeq, type Document, LineCounter, type Node, type Pair } from 'yaml';
import { createAliasResolver } from './yaml-aliases.js';

/** One finding, where it is in the file (1-based line and column) and which field (`services[0].plan`). */
export interface Finding {
  path: string;
  line?: number;
  column?: number;
}
export type BlueprintError = Finding & { error: string };
export type BlueprintWarning = Finding & { resource: string; warning: string };

/**
 * A walk over the parsed YAML that records errors at the node they are about. Checks answer the plain value when the
 * node is right, undefined (with an error recorded) when it is not, so a walk goes on and reports everything at once.
 */
/** How many errors (and warnings) a validation lists. */
export const MAX_FINDINGS = 100;
/** The longest key a "did you mean" is looked for: every field's name is shorter. */
const MAX_HINTED_KEY = 64;
const MORE = `more than ${MAX_FINDINGS}: the rest are not listed`;

export function createWalk(lines: LineCounter, doc: Document.Parsed) {
  const errors: BlueprintError[] = [];
  const warnings: BlueprintWarning[] = [];
  const at = (node: Node | null | undefined): Pick<Finding, 'line' | 'column'> => {
    if (!node?.range) return {};
    const { line, col } = lines.linePos(node.range[0]);
    return { line, column: col };
  };
  // A hostile file can hold an error per line: past MAX_FINDINGS, one last entry says the rest are not listed.
  const error = (path: string, node: Node | null | undefined, message: string) => {
    if (errors.length < MAX_FINDINGS) errors.push({ path, error: message, ...at(node) });
    else if (errors.length === MAX_FINDINGS) errors.push({ path: '', error: MORE });
  };
  const warn = (path: string, node: Node | null | undefined, resource: string, message: string) => {
    if (warnings.length < MAX_FINDINGS) warnings.push({ path, resource, warning: message, ...at(node) });
    else if (warnings.length === MAX_FINDINGS) warnings.push({ path: '', resource: '', warning: MORE });
  };

  /** Resources' names by their path, for the warnings found before the name was read (unknown fields). */
  const named = new Map<string, string>();
  /** The warnings, each naming its resource (by name where the resource has one). */
  const warningsNamed = () => warnings.map((w) => ({ ...w, resource: named.get(w.resource) ?? w.resource }));
  /** The node an alias (`*name`) stands for: nothing, with an error, past the file's alias limits. */
  const resolve = createAliasResolver(doc, (node, message) => error('', node, message));

  type Pairs = Array<Pair<Node, Node | null>>;
  /** A mapping's own pairs, and those of the mappings it merges (`<<: *base` or `<<: [*a, *b]`), earlier ones first. */
  function pairsOf(node: Node, path: string, depth = 0): { own: Pairs; merged: Pairs } {
    const own: Pairs = [];
    const merged: Pairs = [];
    for (const pair of (node as { items: Pairs }).items) {
      if (!(isScalar(pair.key) && typeof pair.key.value === 'symbol')) {
        own.push(pair);
        continue;
      }
      const value = resolve(pair.value);
      for (const source of isSeq(value) ? value.items.map((n) => resolve(n as Node)) : [value]) {
        if (!isMap(source) || depth >= 10) {
          error(path, pair.value, `${path || 'the file'}: << merges a mapping (an alias of one) or a list of them`);
          continue;
        }
        const inner = pairsOf(source, path, depth + 1);
        merged.push(...inner.own, ...inner.merged);
      }
    }
    return { own, merged };
  }

  /**
   * "did you mean `rootDir`?" when a known field is a typo away. Only for a warning that is listed, and a key no longer
   * than any field's name could be with a typo: a file of 200,000 unknown keys costs no guess past the hundredth.
   */
  const hint = (key: string, keys: readonly string[]) => {
    if (warnings.length >= MAX_FINDINGS || keys.length === 0 || key.length > MAX_HINTED_KEY) return '';
    const near = closest(key, keys as string[]);
    return distance(key, near) <= Math.max(1, Math.floor(key.length / 4)) ? ` (did you mean "${near}"?)` : '';
  };

  /**
   * A mapping's entries by key (aliases resolved, merge keys applied: the mapping's own keys win); a missing required
   * key is an error, an unknown one a warning that it is ignored (Render reads the files that carry them).
   */
  function map(
    raw: Node | null | undefined,
    path: string,
    keys: readonly string[],
    required: readonly string[] = [],
  ): Map<string, Node | null> | undefined {
    const node = resolve(raw);
    if (!isMap(node)) {
      error(path, node, `${path || 'the file'} must be a mapping of ${keys.slice(0, 4).join(', ')}…`);
      return undefined;
    }
    const entries = new Map<string, Node | null>();
    const unknown = new Set<string>();
    const take = (pair: Pair<Node, Node | null>, merged: boolean) => {
      const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
      const field = key === undefined ? path : path ? `${path}.${key}` : key;
      if (key === undefined) error(path, pair.key, 'keys must be plain names');
      else if (!keys.includes(key)) {
        if (!unknown.has(key))
          warn(field, pair.key, resourceOf(path), `unknown field "${key}": ignored${hint(key, keys)}`);
        unknown.add(key);
      } else if (!entries.has(key)) entries.set(key, resolve(pair.value) ?? null);
      else if (!merged) error(field, pair.key, `"${key}" is given twice`); // a merged key is overridden, as YAML says
    };
    const { own, merged } = pairsOf(node, path);
    own.forEach((pair) => take(pair, false));
    merged.forEach((pair) => take(pair, true));
    for (const key of required)
      if (!entries.has(key) || entries.get(key) === null)
        error(path ? `${path}.${key}` : key, node, `${key} is required`);
    const name = entries.get('name');
    if (path && resourceOf(path) === path && isScalar(name)) named.set(path, String(name.value));
    return entries;
  }

  /** A scalar as a string; numbers and booleans are read as Render reads them (stored as strings) when `loose`. */
  function str(node: Node | null | undefined, path: string, loose = false): string | undefined {
    if (isScalar(node) && typeof node.value === 'string') return node.value;
    if (loose && isScalar(node) && (typeof node.value === 'number' || typeof node.value === 'boolean'))
      return String(node.value);
    error(path, node, `${path} must be a string`);
    return undefined;
  }

  function oneOf<T extends string>(
    node: Node | null | undefined,
    path: string,
    allowed: readonly T[],
    normalize: (v: string) => string = (v) => v,
  ): T | undefined {
    const value = str(node, path, true);
    if (value === undefined) return undefined;
    const normal = normalize(value) as T;
    if (allowed.includes(normal)) return normal;
    error(path, node, `${path} must be one of ${allowed.join(', ')} (got "${value}")`);
    return undefined;
  }

  function int(node: Node | null | undefined, path: string, min: number, max = Number.MAX_SAFE_INTEGER) {
    const value = isScalar(node) ? Number(node.value) : NaN;
    if (Number.isInteger(value) && value >= min && value <= max && isScalar(node) && node.value !== '') return value;
    error(path, node, `${path} must be a whole number from ${min}${max < Number.MAX_SAFE_INTEGER ? ` to ${max}` : ''}`);
    return undefined;
  }

  function bool(node: Node | null | undefined, path: string): boolean | undefined {
    if (isScalar(node) && typeof node.value === 'boolean') return node.value;
    error(path, node, `${path} must be true or false`);
    return undefined;
  }

  /** Each item of a sequence, with its path; not a sequence is an error. */
  function list(raw: Node | null | undefined, path: string, each: (item: Node | null, path: string) => void) {
    const node = resolve(raw);
    if (!isSeq(node)) return error(path, node, `${path} must be a list`);
    node.items.forEach((item, i) => each(resolve(item as Node | null) ?? null, `${path}[${i}]`));
  }

  return { errors, warnings, warningsNamed, at, error, warn, map, str, oneOf, int, bool, list };
}
export type Walk = ReturnType<typeof createWalk>;

/** The resource a field belongs to (`services[2]`, `projects[0].environments[1].databases[0]`), '' for the file's. */
export const resourceOf = (path: string) =>
  /^(?:ungrouped\.|projects\[\d+\]\.environments\[\d+\]\.)?(?:services|databases|envVarGroups)\[\d+\]/.exec(
    path,
  )?.[0] ?? '';
