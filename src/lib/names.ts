/**
 * What a name (of a service, datastore, env group, project, environment, webhook, API key, blueprint, or a user, whose
 * name also names their workspace) may hold (docs/api.md, "API conventions"): anything printable, and not only spaces.
 * Refused: control characters (C0 such as CR, LF, TAB and BEL, DEL, C1), the bidirectional controls that make text
 * read in another order than it is stored (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069) and the line and
 * paragraph separators (U+2028, U+2029): in a log line, a terminal or a list they forge or hide what follows.
 * `<` and `>` are allowed: a name is data, escaped by whatever renders it as HTML.
 */
const REFUSED = '\\p{Cc}\\u061C\\u200E\\u200F\\u202A-\\u202E\\u2066-\\u2069\\u2028\\u2029';
/** As a JSON Schema `pattern` (Ajv compiles patterns with the `u` flag). */
export const NAME_PATTERN = `^[^${REFUSED}]*[^${REFUSED}\\s][^${REFUSED}]*$`;
export const NAME_RULE = 'must not be blank, nor hold control characters (CR, LF, TAB, BEL…) or bidirectional controls';

const NAME = new RegExp(NAME_PATTERN, 'u');
export const isCleanName = (name: string) => NAME.test(name);
