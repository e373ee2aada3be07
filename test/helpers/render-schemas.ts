import { Ajv, type ValidateFunction } from 'ajv';
import ajvFormats from 'ajv-formats';
import { loadRenderReference } from './render-reference.js';

/** Validators of Render's schemas (helpers/render-reference.ts), for tests that check one body at a time. */
export function renderSchemas() {
  const ajv = new Ajv({ strict: false, allErrors: true });
  (ajvFormats as unknown as typeof ajvFormats.default)(ajv);
  ajv.addSchema(loadRenderReference(), 'render');
  const validator = (ref: string): ValidateFunction => {
    const validate = ajv.getSchema(ref);
    if (!validate) throw new Error(`no schema at ${ref}`);
    return validate;
  };
  /** Ajv's complaints about `value` ([] when it conforms). */
  const violations = (validate: ValidateFunction, value: unknown): string[] =>
    validate(value) ? [] : (validate.errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message}`);
  return {
    /** Against `#/components/schemas/<name>`. */
    component: (name: string, value: unknown) => violations(validator(`render#/components/schemas/${name}`), value),
    /** Against the `status` body of `method renderPath` (`/redis/{redisId}`). */
    response: (method: string, renderPath: string, status: number, value: unknown) =>
      violations(
        validator(
          `render#/paths/${renderPath.replaceAll('/', '~1')}/${method}/responses/${status}/content/application~1json/schema`,
        ),
        value,
      ),
  };
}
