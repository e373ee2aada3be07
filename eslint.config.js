// Type-aware checks that catch real defects: a promise nobody awaits, a promise where a callback
// must return nothing, and values that are never used. Formatting is Prettier's job (.prettierrc.json).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers (docs/architecture.md, "Layers"): files under each glob must not import the listed
 * top-level directories of src/. Type-only imports are allowed where `types` says so (http/
 * serializes the rows core returns). .dependency-cruiser.cjs checks the same order on the resolved
 * files, with the composition root and import cycles.
 */
function layerRules(layers) {
  return Object.entries(layers).map(([files, { forbid, types = false }]) => ({
    files: [files],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: forbid.map((dir) => ({
            group: [`**/${dir}/*`, `**/${dir}/**`],
            message: `${files} must not import src/${dir}/ (docs/architecture.md, "Layers")`,
            allowTypeImports: types,
          })),
        },
      ],
    },
  }));
}

/** The drivers' directories, between core/ and store/. */
const DRIVERS = ['runtime', 'router', 'provisioners', 'integrations', 'observability'];

export default tseslint.config(
  {
    ignores: [
      'node_modules/**',
      'dist/**',
      'drizzle/**',
      'test/fixtures/**',
      'cli/dist/**',
      'web/dist/**',
      'openapi/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/await-thenable': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/no-unused-expressions': ['error', { allowShortCircuit: true, allowTernary: true }],
      '@typescript-eslint/no-explicit-any': 'off',
      'no-control-regex': 'off',
      // A `let` that a closure reads before its one assignment (app/start.ts's `app`) stays a `let`.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
  ...layerRules({
    'src/model/**': { forbid: [...DRIVERS, 'lib', 'store', 'core', 'jobs', 'http'] },
    'src/lib/**': { forbid: [...DRIVERS, 'model', 'store', 'core', 'jobs', 'http'] },
    'src/store/**': { forbid: [...DRIVERS, 'core', 'jobs', 'http'] },
    'src/{runtime,router,provisioners,integrations}/**': { forbid: ['observability', 'store', 'core', 'jobs', 'http'] },
    'src/observability/**': { forbid: ['core', 'jobs', 'http'] },
    'src/core/**': { forbid: ['jobs', 'http'] },
    'src/jobs/**': { forbid: ['http'] },
    'src/http/**': { forbid: ['store', 'runtime', 'router', 'provisioners', 'jobs'], types: true },
  }),
  // The CLI is a client of the API only (docs/cli.md): it and the server never import each other's code.
  {
    files: ['cli/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/src/*', '**/src/**'],
              message: 'cli/ talks to Slipway over HTTP only',
            },
          ],
        },
      ],
    },
  },
  // So is the dashboard (docs/dashboard.md): the browser's code and the server's never import each other.
  {
    files: ['web/**'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/src/*', '**/src/**'], message: 'web/ talks to Slipway over HTTP only' },
            { group: ['**/cli/**'], message: 'web/ and cli/ share only openapi/' },
          ],
        },
      ],
    },
  },
  {
    files: ['src/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/cli/**'], message: 'src/ must not import the CLI' },
            { group: ['**/web/**'], message: 'src/ must not import the dashboard' },
          ],
        },
      ],
    },
  },
  { files: ['**/*.js', '**/*.cjs', '**/*.mjs'], extends: [tseslint.configs.disableTypeChecked] },
  // typescript-eslint reads every file as an ES module; a .cjs config is CommonJS (module.exports).
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs' } },
);
