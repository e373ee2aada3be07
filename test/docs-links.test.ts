/**
 * Every pointer into the docs that the code and the docs give, as `docs/<page>.md, "Section"`, `docs/<page>.md#anchor`
 * or a Markdown link `(docs/<page>.md#anchor)`, leads to a page that exists and a heading it has (issue 31: a comment
 * or an error message pointing at a section that is gone sends a reader nowhere).
 */
import { readdirSync, readFileSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './helpers/process.js';

function filesUnder(dir: string, ext: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const file = path.join(dir, name);
    return statSync(file).isDirectory() ? filesUnder(file, ext) : file.endsWith(ext) ? [file] : [];
  });
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
const slug = (heading: string) =>
  heading
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

/** A page's headings, and the labels of its bulleted paragraphs (`- **Artifacts and disk.** …`), which are cited too. */
const headingsOf = (page: string) =>
  readFileSync(page, 'utf8')
    .replace(/```[\s\S]*?```/g, '')
    .split('\n')
    .flatMap((line) =>
      /^#{1,6} /.test(line)
        ? [line.replace(/^#+ /, '').trim()]
        : [/^\s*- \*\*(.+?)\.?\*\*/.exec(line)?.[1]].filter((label): label is string => !!label),
    );

const sources = [
  ...filesUnder(path.join(REPO_ROOT, 'src'), '.ts'),
  ...filesUnder(path.join(REPO_ROOT, 'docs'), '.md'),
  path.join(REPO_ROOT, 'README.md'),
];
const POINTER = /\b(docs\/[\w-]+\.md|README\.md)(?:, "([^"]{1,80})"|#([\w-]+))/g;

describe('pointers into the docs', () => {
  it('lead to a page and a heading that exist', () => {
    const broken: string[] = [];
    let checked = 0;
    for (const file of sources) {
      const text = readFileSync(file, 'utf8');
      for (const [, page, cited, anchor] of text.matchAll(POINTER)) {
        // A section name a comment wrapped over two lines.
        const section = cited?.replace(/\s*\n\s*(\* ?|\/\/ ?)?/g, ' ');
        checked++;
        const where = `${path.relative(REPO_ROOT, file)}: ${page}${section ? `, "${section}"` : `#${anchor}`}`;
        const target = path.join(REPO_ROOT, page!);
        if (!existsSync(target)) {
          broken.push(`${where} (no such page)`);
          continue;
        }
        const headings = headingsOf(target);
        const found = section
          ? headings.some((h) => h === section || h.startsWith(`${section} `) || h.startsWith(`${section}:`))
          : headings.some((h) => slug(h) === anchor);
        if (!found) broken.push(`${where} (no such heading)`);
      }
    }
    expect(checked).toBeGreaterThan(20);
    expect(broken).toEqual([]);
  });
});
