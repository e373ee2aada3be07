/** Route schemas compiled on first use (src/http/lazy-schemas.ts): the same answers as compiled at start, and none left broken. */
import { Ajv } from 'ajv';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compileAllSchemas, lazySchemas } from '../src/http/lazy-schemas.js';
import { bootServer, type TestServer } from './helpers/server.js';

function appWith(route: (app: ReturnType<typeof Fastify>) => void) {
  const schemas = lazySchemas();
  const app = Fastify({ schemaController: { compilersFactory: { buildSerializer: schemas.serializers } } });
  const body = new Ajv({ coerceTypes: false, useDefaults: true, allErrors: true, strict: false });
  const params = new Ajv({ coerceTypes: 'array', useDefaults: true, allErrors: true, strict: false });
  app.setValidatorCompiler(schemas.validators((part) => (part === 'body' ? body : params)));
  schemas.attach(app);
  route(app);
  return app;
}

describe('lazily compiled route schemas', () => {
  const app = appWith((a) =>
    a.post(
      '/things',
      {
        schema: {
          querystring: {
            type: 'object',
            properties: { limit: { type: 'integer', default: 20 }, tag: { type: 'array', items: { type: 'string' } } },
          },
          body: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
          response: {
            200: {
              type: 'object',
              properties: {
                name: { type: 'string' },
                limit: { type: 'integer' },
                tag: { type: 'array', items: { type: 'string' } },
              },
            },
          },
        },
      },
      async (req: { body: unknown; query: unknown }) => ({
        ...(req.body as object),
        ...(req.query as object),
        secret: 'not in the schema',
      }),
    ),
  );
  afterAll(() => app.close());

  it('coerce, fill defaults, refuse and serialize as schemas compiled at start do', async () => {
    const ok = await app.inject({ method: 'POST', url: '/things?tag=a', payload: { name: 'x' } });
    expect(ok.statusCode).toBe(200);
    // A default filled in, a lone value made an array; the response's serializer drops what it does not declare.
    expect(ok.json()).toEqual({ name: 'x', limit: 20, tag: ['a'] });
    const wrong = await app.inject({ method: 'POST', url: '/things?limit=many', payload: { name: 'x' } });
    expect(wrong.statusCode).toBe(400);
    expect(wrong.json().message).toMatch(/querystring\/limit must be integer/);
    const noBody = await app.inject({ method: 'POST', url: '/things', payload: {} });
    expect(noBody.statusCode).toBe(400);
    expect(noBody.json().message).toMatch(/must have required property 'name'/);
  });

  it('compileAllSchemas throws for a schema that does not compile, as the start did', async () => {
    const broken = appWith((a) =>
      a.get('/broken', { schema: { querystring: { $ref: '#/definitions/missing' } } }, async () => 'never'),
    );
    await broken.ready();
    expect(() => compileAllSchemas(broken)).toThrow(/can't resolve reference/);
    await broken.close();
  });
});

describe("Slipway's routes", () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await bootServer();
  });
  afterAll(() => server?.close());

  it('all have schemas that compile', () => {
    // Validators and serializers of ~80 routes: most not used yet by this fresh server.
    expect(compileAllSchemas(server.slipway.app)).toBeGreaterThan(100);
    expect(compileAllSchemas(server.slipway.app)).toBe(0);
  });
});
