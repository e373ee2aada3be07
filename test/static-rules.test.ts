/** Static sites' path patterns: Render's `*` and `:name`, run on RE2 so no pattern makes a request expensive. */
import { describe, expect, it } from 'vitest';
import { compilePattern, compileRules, fillDestination } from '../src/router/static-rules.js';

describe('static site rules', () => {
  it('matches * across segments and :name within one, and fills the destination', () => {
    const values = compilePattern('/blog/:year/*').match('/blog/2024/a/b.html')!;
    expect(Object.fromEntries(values)).toEqual({ ':year': '2024', '*': 'a/b.html' });
    expect(fillDestination('/archive/:year/:splat', values)).toBe('/archive/2024/a/b.html');
    expect(compilePattern('/blog/:year/*').match('/blog/')).toBeUndefined();
    expect(compilePattern('/a.b').match('/aXb')).toBeUndefined(); // literal dots, not regex ones
    expect(compilePattern('/(x)+$').match('/(x)+$')).toBeDefined();
  });

  it('takes the first matching route and every matching header', () => {
    const rules = compileRules({
      headers: [
        { path: '/*', name: 'X-A', value: '1' },
        { path: '/assets/*', name: 'Cache-Control', value: 'max-age=60' },
      ],
      routes: [
        { type: 'redirect', source: '/old', destination: '/new' },
        { type: 'rewrite', source: '/*', destination: '/index.html' },
      ],
    });
    expect(rules.route('/old')).toEqual({ type: 'redirect', destination: '/new' });
    expect(rules.route('/x/y')).toEqual({ type: 'rewrite', destination: '/index.html' });
    expect(rules.headersFor('/assets/app.js')).toEqual([
      ['X-A', '1'],
      ['Cache-Control', 'max-age=60'],
    ]);
  });

  it('stays linear on a pattern made to backtrack', () => {
    const pattern = compilePattern(`/${'*a'.repeat(40)}`);
    const path = `/${'a'.repeat(20_000)}b`;
    const start = performance.now();
    for (let i = 0; i < 20; i++) expect(pattern.match(path)).toBeUndefined();
    expect(performance.now() - start).toBeLessThan(2000);
  });

  it('takes the first * and the first of each :name; ** is one *', () => {
    const values = compilePattern('/:a/:a/**/x/*').match('/1/2/p/q/x/r')!;
    expect(Object.fromEntries(values)).toEqual({ ':a': '1', '*': 'p/q' });
    expect(compilePattern('/**').match('/')?.get('*')).toBe('');
  });

  it('finds the values of a long path that matches a pattern of 1,000 wildcards quickly', () => {
    // 1,000 captures over 16 KB (the router's longest request line) took 35 s on native RE2: now one `*`, one capture.
    const rules = compileRules({
      headers: [{ path: `/${'*'.repeat(1000)}`, name: 'X-A', value: '1' }],
      routes: [{ type: 'rewrite', source: `/${'*'.repeat(1000)}.html`, destination: '/:splat' }],
    });
    const path = `/${'a'.repeat(16_000)}.html`;
    const start = performance.now();
    for (let i = 0; i < 5; i++) {
      expect(rules.headersFor(path)).toEqual([['X-A', '1']]);
      expect(rules.route(path)?.destination).toBe(`/${'a'.repeat(16_000)}`);
    }
    expect(performance.now() - start).toBeLessThan(2000);
  });
});
