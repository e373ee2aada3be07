import { BASE_ENV } from './env.js';

/** The platform's variables and the base environment are no secrets; every other value a process gets may be. */
const PUBLIC_KEY = /^(PORT|RENDER(_.*)?|IS_PULL_REQUEST|SLIPWAY(_.*)?|HOME|npm_config_.*|YARN_.*|COREPACK_HOME)$/;
/** Shorter values are masked nowhere: "true" or "3000" would blank out unrelated words. */
const MIN_SECRET_CHARS = 6;
const TAIL_LINES = 10;
const TAIL_CHARS = 1500;

/** The values in `env` that must never appear in a reason: the service's and its env groups' own. */
export function secretValues(env: Record<string, string>): string[] {
  return Object.entries(env)
    .filter(([key, value]) => !PUBLIC_KEY.test(key) && BASE_ENV[key] !== value && value.length >= MIN_SECRET_CHARS)
    .map(([, value]) => value)
    .sort((a, b) => b.length - a.length); // a value that holds another is masked whole
}

/**
 * The last lines of a process's output, for the end of a failure reason (docs/deploys.md, "Failure reasons"): at
 * most 10 lines and 1,500 characters, each secret value replaced by `********`. Empty when there was no output.
 */
export function outputTail(text: string, secrets: string[]): string {
  const lines = masked(text, secrets).replace(/\r/g, '').split('\n');
  const tail = lines
    .filter((line) => line.trim() !== '')
    .slice(-TAIL_LINES)
    .join('\n');
  return tail.length > TAIL_CHARS ? `…${tail.slice(-TAIL_CHARS)}` : tail;
}

/** `text` with each secret value replaced by `********`. */
export function masked(text: string, secrets: string[]): string {
  let out = text;
  for (const secret of secrets) out = out.split(secret).join('********');
  return out;
}
