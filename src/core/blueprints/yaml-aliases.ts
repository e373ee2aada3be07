import { isAlias, isMap, isScalar, isSeq, type Document, type Node, visit } from 'yaml';

/** Aliases (`*name`) a file may use: the cap the model's toJS has, so a walk over an alias bomb stays small. */
export const MAX_ALIASES = 100;
/**
 * Values the aliases of a file may stand for, all together: each alias is walked again, so 99 aliases of a 50,000-entry
 * list would make a 2 MB file cost as much as a 180 MB one. Real files alias a few settings or env vars.
 */
export const MAX_ALIASED_VALUES = 20_000;

/**
 * Aliases (`*name`) for a walk over a parsed file: each resolves to its anchored node, until the file's aliases pass
 * MAX_ALIASES or stand for MAX_ALIASED_VALUES in all; then `onLimit` is told once and every alias resolves to nothing.
 */
export function createAliasResolver(doc: Document.Parsed, onLimit: (alias: Node, message: string) => void) {
  let aliases = 0;
  let aliased = 0;
  /** Values under each anchored node, counted once (a walk of that node: no more than the file holds). */
  const sizes = new WeakMap<Node, number>();
  const sizeOf = (node: Node) => {
    let size = sizes.get(node);
    if (size === undefined) {
      size = 0;
      visit(node, () => void size!++);
      sizes.set(node, size);
    }
    return size;
  };
  /**
   * Each alias's node, found in one pass over the file: the anchor of that name last defined before it, as YAML reads
   * it (the `yaml` package's own Alias.resolve walks the whole document for each alias).
   */
  let targets: Map<Node, Node> | undefined;
  const targetOf = (alias: Node) => {
    if (!targets) {
      const found = new Map<Node, Node>();
      const anchors = new Map<string, Node>();
      visit(doc, (_key, node) => {
        if (isAlias(node)) {
          const target = anchors.get(node.source);
          if (target) found.set(node, target);
        } else if ((isScalar(node) || isMap(node) || isSeq(node)) && node.anchor) anchors.set(node.anchor, node);
      });
      targets = found;
    }
    return targets.get(alias);
  };
  /** The node an alias (`*name`) stands for; past MAX_ALIASES, or MAX_ALIASED_VALUES in all, an error and nothing. */
  function resolve(node: Node | null | undefined): Node | null | undefined {
    if (!isAlias(node)) return node;
    if (aliases === Infinity) return null; // over a limit already, and said so
    const target = targetOf(node);
    aliased += target ? sizeOf(target) : 0;
    if (++aliases > MAX_ALIASES || aliased > MAX_ALIASED_VALUES) {
      const over =
        aliases > MAX_ALIASES
          ? `the file uses more than ${MAX_ALIASES} aliases`
          : `the file's aliases stand for more than ${MAX_ALIASED_VALUES} values`;
      onLimit(node, over);
      aliases = Infinity;
      return null;
    }
    return target;
  }
  return resolve;
}
