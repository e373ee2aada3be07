// The layers of src/ (docs/architecture.md, "Layers"), checked on the files imports resolve to, type-only imports
// included: `npm run deps`, which .ci/run runs after ESLint. eslint.config.js checks the same table on import
// specifiers as code is written; this file adds what a specifier cannot show: the composition root and cycles.

/** Each layer's files, top to bottom. app/ is the composition root (src/app/); main.ts alone sits above it. */
const LAYERS = {
  main: '^src/main\\.ts$',
  app: '^src/app/',
  http: '^src/http/',
  jobs: '^src/jobs/',
  core: '^src/core/',
  // A driver too, beside the others, that reads and writes the store (logs, metrics, usage).
  observability: '^src/observability/',
  drivers: '^src/(runtime|router|provisioners|integrations)/',
  store: '^src/store/',
  model: '^src/model/',
  lib: '^src/lib/',
};

/** What each layer must not import (eslint.config.js has the same table); `types`: type-only imports allowed. */
const FORBIDDEN = {
  app: { forbid: ['main'] },
  http: { forbid: ['main', 'app', 'jobs'] },
  // http/ serializes core's rows and reports the runtime's state: their types only.
  'http-values': {
    from: 'http',
    forbid: ['store', 'drivers'],
    types: true,
    except: '^src/(integrations|observability)/',
  },
  jobs: { forbid: ['main', 'app', 'http'] },
  core: { forbid: ['main', 'app', 'http', 'jobs'] },
  observability: { forbid: ['main', 'app', 'http', 'jobs', 'core'] },
  drivers: { forbid: ['main', 'app', 'http', 'jobs', 'core', 'observability', 'store'] },
  store: { forbid: ['main', 'app', 'http', 'jobs', 'core', 'observability', 'drivers'] },
  model: { forbid: ['main', 'app', 'http', 'jobs', 'core', 'observability', 'drivers', 'store', 'lib'] },
  lib: { forbid: ['main', 'app', 'http', 'jobs', 'core', 'observability', 'drivers', 'store', 'model'] },
};

const either = (names) => names.map((name) => LAYERS[name]);

const layerRules = Object.entries(FORBIDDEN).map(([name, { from = name, forbid, types = false, except }]) => ({
  name: `layer-${name}`,
  comment: `src/ ${from} must not import ${forbid.join(', ')}${types ? ' (type-only imports allowed)' : ''} (docs/architecture.md, "Layers")`,
  severity: 'error',
  from: { path: LAYERS[from] },
  to: {
    path: either(forbid),
    ...(except ? { pathNot: except } : {}),
    ...(types ? { dependencyTypesNot: ['type-only'] } : {}),
  },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'An import cycle, type-only imports included: move the shared piece below both (docs/architecture.md, "Layers")',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'routes-inside-http',
      comment: 'http/routes/ is registered by http/app.ts; what another layer needs from a route belongs in core/',
      severity: 'error',
      from: { pathNot: '^src/http/' },
      to: { path: '^src/http/routes/' },
    },
    {
      name: 'services-over-deploys',
      comment: 'core/services/ uses core/deploys/ (the engine through DeployPort, env precedence), never the reverse',
      severity: 'error',
      from: { path: '^src/core/deploys/' },
      to: { path: '^src/core/services/' },
    },
    // A deploy's rooms, top to bottom (docs/architecture.md, "Deploys"): deploys/ (requests and the deploy run) uses
    // builds/ and instances/, which use service-state/; builds and instances never use each other.
    ...[
      ['builds', ['deploys', 'instances', 'services']],
      ['instances', ['deploys', 'builds', 'services']],
      ['service-state', ['deploys', 'builds', 'instances', 'services']],
    ].map(([room, above]) => ({
      name: `${room}-below-${above.join('-')}`,
      comment: `core/${room}/ sits below core/${above.join('/, core/')}/`,
      severity: 'error',
      from: { path: `^src/core/${room}/` },
      to: { path: `^src/core/(${above.join('|')})/` },
    })),
    ...layerRules,
  ],
  options: {
    includeOnly: '^src/',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js'],
    },
  },
};
