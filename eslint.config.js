// Type-aware checks that catch real defects: a promise nobody awaits, a promise where a callback
// must return nothing, and values that are never used. Formatting is Prettier's job (.prettierrc.json).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

/**
 * The layers (docs/architecture.md, "Layers"): files under each glob must not import the listed
 * top-level directories of src/. Type-only imports are allowed where `types` says so (http/
 * serializes the rows core returns).
 */
function layerRules(layers) {
  return Object.entries(layers).map(([files, { forbid, types = false }]) => ({
    files: [files],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: forbid.map((dir) => ({
            // store/enums.ts holds constant tuples every layer derives its types and schemas from.
            group: [`**/${dir}/*`, `**/${dir}/**`, '!**/store/enums.js'],
            message: `${files} must not import src/${dir}/ (docs/architecture.md, "Layers")`,
            allowTypeImports: types,
          })),
        },
      ],
    },
  }));
}

export default tseslint.config(
  { ignores: ['node_modules/**', 'dist/**', 'drizzle/**', 'test/fixtures/**'] },
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
    'src/lib/**': { forbid: ['store', 'core', 'http', 'jobs', 'runtime', 'router', 'provisioners', 'observability'] },
    'src/store/**': {
      forbid: ['core', 'http', 'jobs', 'runtime', 'router', 'provisioners', 'observability'],
      types: true,
    },
    'src/{runtime,router,provisioners,integrations}/**': { forbid: ['core', 'http', 'jobs', 'store', 'observability'] },
    'src/core/**': { forbid: ['http', 'jobs'] },
    'src/observability/**': { forbid: ['http', 'jobs'] },
    'src/jobs/**': { forbid: ['http'] },
    'src/http/**': { forbid: ['store', 'runtime', 'router', 'provisioners', 'jobs'], types: true },
  }),
  { files: ['**/*.js'], extends: [tseslint.configs.disableTypeChecked] },
);
