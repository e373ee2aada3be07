import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';

/** Where Swagger UI serves the API's documentation (the start-up summary links it). */
export const DOCS_PATH = '/docs';

/**
 * The OpenAPI 3.1 document is generated from the route schemas at /v1/openapi.json,
 * so every route any issue adds is in it automatically; /docs renders it.
 */
export async function registerOpenApi(app: FastifyInstance, publicUrl: string) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Slipway API',
        version: '1.0.0',
        description:
          "Self-hosted application platform. Payloads follow Render's public API where Render has the route.",
      },
      servers: [{ url: publicUrl }],
      components: {
        securitySchemes: {
          BearerAuth: { type: 'http', scheme: 'bearer', description: 'API key (slw_…) or the operator token' },
          SessionCookie: { type: 'apiKey', in: 'cookie', name: 'slipway_session' },
        },
      },
      security: [{ BearerAuth: [] }, { SessionCookie: [] }],
    },
  });
  await app.register(swaggerUi, { routePrefix: DOCS_PATH, staticCSP: true });
  app.get('/v1/openapi.json', { schema: { hide: true }, config: { access: 'public' } }, async () => app.swagger());
}
