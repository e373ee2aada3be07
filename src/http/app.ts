import cookie from '@fastify/cookie';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv } from 'ajv';
import ajvFormats from 'ajv-formats';
import { isAcceptedDate } from '../lib/date-range.js';
import Fastify, { type FastifyInstance } from 'fastify';
import { levels } from 'pino';
import type { HttpDeps } from './deps.js';
import { registerAudit } from './plugins/audit.js';
import { registerDashboard } from './plugins/dashboard.js';
import { registerAuthentication } from './plugins/authenticate.js';
import { newRequestId, registerErrorHandling, sendClientError, sendFrameworkError } from './plugins/errors.js';
import { lazySchemas } from './lazy-schemas.js';
import { registerIdempotency } from './plugins/idempotency.js';
import { registerOpenApi } from './plugins/openapi.js';
import { registerWebSocket } from './plugins/websocket.js';
import { registerRateLimit } from './plugins/rate-limit.js';
import { redactUrl } from './plugins/redact.js';
import { registerTextInputCheck } from './plugins/text-input.js';
import { serverTimeouts } from '../lib/http-timeouts.js';
import { registerRoutes } from './route.js';
import { apiKeyRoutes } from './routes/api-keys.js';
import { auditLogRoutes } from './routes/audit-logs.js';
import { datastoreRoutes } from './routes/datastores.js';
import { postgresAccessRoutes } from './routes/postgres-access.js';
import { datastoreExportRoutes } from './routes/datastore-exports.js';
import { deployRoutes } from './routes/deploys.js';
import { envGroupRoutes } from './routes/env-groups.js';
import { webhookRoutes } from './routes/webhooks.js';
import { notificationRoutes } from './routes/notifications.js';
import { blueprintManagementRoutes } from './routes/blueprint-management.js';
import { blueprintRoutes } from './routes/blueprints.js';
import { deployHookRoutes } from './routes/deploy-hooks.js';
import { githubRoutes } from './routes/github.js';
import { customDomainRoutes } from './routes/custom-domains.js';
import { siteRuleRoutes } from './routes/site-rules.js';
import { oauthRoutes } from './routes/oauth.js';
import { billingRoutes } from './routes/billing.js';
import { envVarRoutes } from './routes/env-vars.js';
import { secretFileRoutes } from './routes/secret-files.js';
import { jobRoutes } from './routes/jobs.js';
import { scalingRoutes } from './routes/scaling.js';
import { cronRunRoutes } from './routes/cron-runs.js';
import { eventRoutes } from './routes/events.js';
import { authRoutes } from './routes/auth.js';
import { healthRoutes } from './routes/health.js';
import { logRoutes } from './routes/logs.js';
import { metricRoutes } from './routes/metrics.js';
import { metricFamilyRoutes } from './routes/metrics-family.js';
import { registerPrometheus } from './routes/prometheus.js';
import { projectRoutes } from './routes/projects.js';
import { registryCredentialRoutes } from './routes/registry-credentials.js';
import { diskRoutes } from './routes/disks.js';
import { logStreamRoutes } from './routes/log-streams.js';
import { metricsStreamRoutes } from './routes/metrics-streams.js';
import { maintenanceRunRoutes } from './routes/maintenance-runs.js';
import { serviceRoutes } from './routes/services.js';
import { registerUploadParsers, sourceUploadRoutes } from './routes/source-upload.js';
import { teamRoutes } from './routes/team.js';
import { usageRoutes } from './routes/usage.js';
import { userRoutes } from './routes/users.js';
import { workspaceRoutes } from './routes/workspaces.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

function createAjv(coerceTypes: boolean | 'array') {
  // Bodies are not coerced: {"name": 5} is a wrong type, not the string "5".
  const ajv = new Ajv({ coerceTypes, useDefaults: true, allErrors: true, strict: false });
  // ajv-formats is CommonJS: its module object is the function.
  (ajvFormats as unknown as typeof ajvFormats.default)(ajv);
  // Every date the API takes is held to one range (lib/date-range.ts), whichever route takes it.
  ajv.addFormat('date-time', { type: 'string', validate: isAcceptedDate });
  return ajv;
}

/** `log: false` silences the server (tests); a stream receives the JSON log lines instead of stdout. */
export interface LogOptions {
  log?: false | { stream: NodeJS.WritableStream; level?: string };
}

export async function buildApp(deps: HttpDeps, options: LogOptions = {}): Promise<FastifyInstance> {
  const timeouts = serverTimeouts(deps.config);
  const schemas = lazySchemas();
  const app = Fastify({
    schemaController: { compilersFactory: { buildSerializer: schemas.serializers } },
    logger:
      options.log === false
        ? false
        : {
            level: options.log?.level ?? deps.config.logLevel,
            ...(options.log ? { stream: options.log.stream } : {}),
            redact: ['req.headers.authorization', 'req.headers.cookie', 'res.headers["set-cookie"]'],
            serializers: { req: (req) => ({ method: req.method, url: redactUrl(req.url), remoteAddress: req.ip }) },
          },
    bodyLimit: deps.config.bodyLimitBytes,
    // Slow headers (slowloris) and bodies that never end are cut: 408 via sendClientError. Fastify
    // sets requestTimeout and keepAliveTimeout on the server itself, over what `http` says.
    http: timeouts,
    requestTimeout: timeouts.requestTimeout,
    keepAliveTimeout: timeouts.keepAliveTimeout,
    genReqId: (req) => {
      const given = req.headers['request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : newRequestId();
    },
    return503OnClosing: true,
    // Above the longest path parameter a schema allows (env var keys: 256), so the schema decides.
    routerOptions: { maxParamLength: 512 },
    // A malformed %-escape or an over-long segment is refused by the router itself, before any hook.
    frameworkErrors: (err, request, reply) => void sendFrameworkError(err, request, reply),
    clientErrorHandler: sendClientError,
  }).withTypeProvider<TypeBoxTypeProvider>();

  const bodyAjv = createAjv(false);
  const paramAjv = createAjv('array');
  app.setValidatorCompiler(schemas.validators((httpPart) => (httpPart === 'body' ? bodyAjv : paramAjv)));
  schemas.attach(app);

  app.addHook('onRequest', async (request, reply) => {
    reply.header('Request-Id', request.id);
  });
  // The dashboard's files (web/dist), and its page for any deep link the API's routes do not match.
  registerErrorHandling(app, await registerDashboard(app));
  registerTextInputCheck(app);
  // First, so that its hooks know an upgrade request even when authentication refuses it
  // (the refused upgrade's socket is then closed rather than left open).
  await registerWebSocket(app);
  await app.register(cookie);
  await registerRateLimit(app, deps.config.rateLimitPerMinute);
  registerAuthentication(app, { auth: deps.auth, publicUrl: deps.config.publicUrl });
  registerIdempotency(app, deps.idempotency);
  registerAudit(app, deps.audit);
  await registerOpenApi(app, deps.config.publicUrl);
  await registerUploadParsers(app, deps.config.maxUploadBytes);
  registerPrometheus(app, deps);

  registerRoutes(app, [
    ...healthRoutes(deps),
    ...authRoutes(deps, app),
    ...userRoutes(),
    ...apiKeyRoutes(deps),
    ...workspaceRoutes(deps),
    ...teamRoutes(deps),
    ...auditLogRoutes(deps),
    ...serviceRoutes(deps),
    ...deployRoutes(deps),
    ...envVarRoutes(deps),
    ...secretFileRoutes(deps),
    ...jobRoutes(deps),
    ...scalingRoutes(deps),
    ...cronRunRoutes(deps),
    ...eventRoutes(deps),
    ...envGroupRoutes(deps),
    ...registryCredentialRoutes(deps),
    ...diskRoutes(deps),
    ...logStreamRoutes(deps),
    ...metricsStreamRoutes(deps),
    ...maintenanceRunRoutes(deps),
    ...webhookRoutes(deps),
    ...notificationRoutes(deps),
    ...blueprintManagementRoutes(deps),
    ...blueprintRoutes(deps),
    ...deployHookRoutes(deps),
    ...githubRoutes(deps),
    ...customDomainRoutes(deps),
    ...siteRuleRoutes(deps),
    ...oauthRoutes(deps),
    ...billingRoutes(deps),
    ...projectRoutes(deps),
    ...datastoreRoutes(deps),
    ...postgresAccessRoutes(deps),
    ...datastoreExportRoutes(deps),
    ...sourceUploadRoutes(deps),
    ...logRoutes(deps),
    ...metricRoutes(deps),
    ...metricFamilyRoutes(deps),
    ...usageRoutes(deps),
  ]);
  return app;
}

/** Fastify logs "Server listening at …" at info; `quiet` (a start-up summary says it instead) lets only warnings through meanwhile. */
export async function listen(app: FastifyInstance, address: { host: string; port: number }, quiet: boolean) {
  const level = app.log.level;
  const { values } = levels;
  if (quiet && (values[level] ?? Infinity) < values.warn!) app.log.level = 'warn';
  try {
    await app.listen(address);
  } finally {
    app.log.level = level;
  }
}
