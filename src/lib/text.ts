/** What Postgres text cannot hold: NUL, and lone UTF-16 surrogates (they have no UTF-8 form). */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE, 'g');

export const isStorableText = (s: string) => !UNSTORABLE.test(s);

/** `s` with each character Postgres text cannot hold replaced by U+FFFD. */
export const toStorableText = (s: string) => s.replace(UNSTORABLE_ALL, '\uFFFD');
