import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { shellQuote } from './sandbox.js';

/** Each command and the script that runs it, under the Node install's lib/node_modules: Corepack's entry points, npm's. */
const SHIMS: Record<string, string> = {
  yarn: 'corepack/dist/yarn.js',
  yarnpkg: 'corepack/dist/yarn.js',
  pnpm: 'corepack/dist/pnpm.js',
  pnpx: 'corepack/dist/pnpx.js',
  // npm runs on the Node that runs Slipway, whichever Node a deploy asked for (which comes first on its PATH, so its
  // scripts run on that one): the npm bundled here supports this Node, not always the asked one (npm 11 warns on 18).
  npm: 'npm/bin/npm-cli.js',
  npx: 'npm/bin/npx-cli.js',
};

/** What builds get to run yarn and pnpm: a dir of shims, first on their PATH, and Corepack's settings. */
export interface Toolchain {
  binDir: string;
  env: Record<string, string>;
}

/**
 * yarn and pnpm through the Corepack bundled with the Node that runs Slipway, with nothing installed globally: a shim
 * per command in `binDir` (a dir Slipway owns; bound read-only into builds). Corepack then runs the version a
 * project's `packageManager` names, or its default. Undefined when this Node has no Corepack.
 * Corepack's settings: no prompt, downloads from the registry (yarn 2+ from its npm package rather than
 * repo.yarnpkg.com), never a package.json rewritten to pin a version, and without a packageManager field the version
 * this Corepack knows to be good rather than whatever is newest (reproducible builds). Builds' Node trusts the extra CAs that
 * Slipway's own does (NODE_EXTRA_CA_CERTS: a machine whose way out re-signs TLS).
 */
export interface CorepackSettings {
  registry?: string;
  /** COREPACK_INTEGRITY_KEYS: `0` skips the signature check, for a registry mirror that drops npm's signatures. */
  integrityKeys?: string;
}

export function installCorepackShims(
  binDir: string,
  settings: CorepackSettings = {},
  node = process.execPath,
  extraCaCerts = process.env.NODE_EXTRA_CA_CERTS,
): Toolchain | undefined {
  const modules = path.join(path.dirname(node), '..', 'lib', 'node_modules');
  if (!existsSync(path.join(modules, SHIMS.yarn!))) return undefined;
  mkdirSync(binDir, { recursive: true });
  chmodSync(binDir, 0o755);
  for (const [name, entry] of Object.entries(SHIMS)) {
    if (!existsSync(path.join(modules, entry))) continue;
    const script = `#!/bin/sh\nexec ${shellQuote(node)} ${shellQuote(path.join(modules, entry))} "$@"\n`;
    writeFileSync(path.join(binDir, name), script, { mode: 0o755 });
    chmodSync(path.join(binDir, name), 0o755);
  }
  return {
    binDir,
    env: {
      COREPACK_ENABLE_DOWNLOAD_PROMPT: '0',
      COREPACK_NPM_REGISTRY: settings.registry ?? 'https://registry.npmjs.org',
      COREPACK_ENABLE_AUTO_PIN: '0',
      COREPACK_DEFAULT_TO_LATEST: '0',
      // npm asks the registry whether it is the newest npm after every command: a request and a notice, per build.
      npm_config_update_notifier: 'false',
      ...(settings.integrityKeys !== undefined ? { COREPACK_INTEGRITY_KEYS: settings.integrityKeys } : {}),
      ...(extraCaCerts && existsSync(extraCaCerts) ? { NODE_EXTRA_CA_CERTS: extraCaCerts } : {}),
    },
  };
}
