import type { Ajv, ValidateFunction } from 'ajv';
import type { FastifyInstance, FastifySchemaCompiler, FastifyServerOptions } from 'fastify';
import { createRequire } from 'node:module';
import { isSharedPage } from '../lib/cursor.js';

/**
 * Route schemas are compiled on a route's first use instead of all at start: compiling the validators and response
 * serializers of every route took 0.3-1 s of each start. Each is compiled by the same compiler, with the same
 * options, as before; only when changes. compileAllSchemas compiles whatever is still pending (the tests do, so a
 * schema that does not compile still fails the build, as it failed the start).
 */

type SerializerFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>['buildSerializer'] &
  object;

// Fastify's default serializer factory (fast-json-stringify), from Fastify's own dependencies.
const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
const { SerializerSelector } = fromFastify('@fastify/fast-json-stringify-compiler') as {
  SerializerSelector: () => SerializerFactory;
};

const compileAllOf = new WeakMap<object, () => number>();

/** `compile` on the first call of the returned getter; until then it is in `pending`. */
function once<F>(pending: Set<() => unknown>, compile: () => F): () => F {
  let compiled: F | undefined;
  const get = () => {
    if (compiled === undefined) {
      compiled = compile();
      pending.delete(get);
    }
    return compiled;
  };
  pending.add(get);
  return get;
}

/** The compilers of one Fastify instance: `serializers` for its options, `validators` for setValidatorCompiler. */
export function lazySchemas() {
  const pending = new Set<() => unknown>();
  /** Fastify's default response serializers (fast-json-stringify), compiled on a route's first reply. */
  const serializers: SerializerFactory = (externalSchemas, serializerOpts) => {
    const build = SerializerSelector()(externalSchemas, serializerOpts);
    return (route) => {
      const get = once(pending, () => build(route));
      // A shared page never changes (lib/cursor.ts envelopeOf): its JSON is made once per route.
      const made = new WeakMap<object, string>();
      return (data) => {
        if (!isSharedPage(data)) return get()(data);
        let json = made.get(data as object);
        if (json === undefined) made.set(data as object, (json = get()(data)));
        return json;
      };
    };
  };
  /** Validators from `ajvFor(httpPart)`, compiled when a request first needs them. */
  const validators =
    (ajvFor: (httpPart: string | undefined) => Ajv): FastifySchemaCompiler<unknown> =>
    ({ schema, httpPart }) => {
      const get = once(pending, () => ajvFor(httpPart).compile(schema as object));
      const validate = (data: unknown, context?: object) => {
        const fn = get() as ValidateFunction & ((data: unknown, context?: object) => boolean);
        const valid = fn(data, context);
        validate.errors = fn.errors;
        return valid;
      };
      validate.errors = undefined as ValidateFunction['errors'];
      // Fastify hands Ajv's functions (they have schemaEnv) the request as parent data, so a root value can be coerced.
      Object.defineProperty(validate, 'schemaEnv', { get: () => get().schemaEnv });
      return validate;
    };
  return {
    serializers,
    validators,
    /** Makes compileAllSchemas(app) reach these compilers. */
    attach: (app: FastifyInstance) =>
      void compileAllOf.set(app, () => {
        const all = [...pending];
        for (const get of all) get();
        return all.length;
      }),
  };
}

/** Compiles every schema of `app` not compiled yet (how many); throws, as the start did, when one does not compile. */
export function compileAllSchemas(app: FastifyInstance): number {
  return compileAllOf.get(app)?.() ?? 0;
}
