/**
 * What a module logs through: an object and a message. pino's logger (app/start.ts's system log) and Fastify's both fit
 * it, and so does a test's fake. A module that logs at a few levels only asks for those: `Pick<Logger, 'warn'>`.
 */
export interface Logger {
  debug(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}
