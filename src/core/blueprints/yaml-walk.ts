import { isMap, isScalar, isSeq, LineCounter, type Node, type Pair } from 'yaml';

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
const MORE = `more than ${MAX_FINDINGS}: the rest are not listed`;

export function createWalk(lines: LineCounter) {
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

  /** A mapping's entries by key; an unknown key, or a missing required one, is an error. */
  function map(
    node: Node | null | undefined,
    path: string,
    keys: readonly string[],
    required: readonly string[] = [],
  ): Map<string, Node | null> | undefined {
    if (!isMap(node)) {
      error(path, node, `${path || 'the file'} must be a mapping of ${keys.slice(0, 4).join(', ')}…`);
      return undefined;
    }
    const entries = new Map<string, Node | null>();
    for (const pair of node.items as Array<Pair<Node, Node | null>>) {
      const key = isScalar(pair.key) ? String(pair.key.value) : undefined;
      const field = key === undefined ? path : path ? `${path}.${key}` : key;
      if (key === undefined) error(path, pair.key, 'keys must be plain names');
      else if (!keys.includes(key)) error(field, pair.key, `unknown field "${key}"`);
      else if (entries.has(key)) error(field, pair.key, `"${key}" is given twice`);
      else entries.set(key, pair.value);
    }
    for (const key of required)
      if (!entries.has(key) || entries.get(key) === null)
        error(path ? `${path}.${key}` : key, node, `${key} is required`);
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
  function list(node: Node | null | undefined, path: string, each: (item: Node | null, path: string) => void) {
    if (!isSeq(node)) return error(path, node, `${path} must be a list`);
    node.items.forEach((item, i) => each(item as Node | null, `${path}[${i}]`));
  }

  return { errors, warnings, at, error, warn, map, str, oneOf, int, bool, list };
}
export type Walk = ReturnType<typeof createWalk>;
