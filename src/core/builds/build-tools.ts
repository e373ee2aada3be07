import type { RuntimeTools } from '../../runtime/types.js';
import type { DeployToolchain } from '../../store/schema/index.js';
import type { ServiceRow } from '../../store/repos/services.js';

/** What a build runs with beyond the service's variables (docs/deploys.md, "Runtime versions"). */
export interface BuildTools {
  /** Added to the build's environment (PATH with the asked Node first, its headers for native addons). */
  env: Record<string, string>;
  /** Kept on the deploy, for its instances and pre-deploy command. */
  toolchain: DeployToolchain;
  /** The Node.js version the build runs: the dependency cache's key includes it. */
  nodeVersion: string;
  /** Shell steps run in the build's sandbox before and after its command (wrapCommand), as the app user. */
  before: string[];
  after: string[];
}

/** A build about to run: its service, the runtime's tools, its variables and dirs, and its log. */
export interface BuildContext {
  tools: RuntimeTools;
  service: ServiceRow;
  env: Record<string, string>;
  workDir: string;
  repoRoot: string;
  say(line: string): void;
  signal: AbortSignal;
}
