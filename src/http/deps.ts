import type { Access } from '../core/access.js';
import type { ApiKeys } from '../core/api-keys.js';
import type { AuditLog } from '../core/audit.js';
import type { Auth } from '../core/auth.js';
import type { Team } from '../core/team.js';
import type { DeployEngine } from '../core/deploys/engine.js';
import type { AppUrls } from '../core/deploys/env.js';
import type { SaveUpload } from '../core/deploys/sources.js';
import type { EnvVars } from '../core/services/env-vars.js';
import type { Datastores } from '../core/datastores/datastores.js';
import type { EnvGroups } from '../core/env-groups.js';
import type { Projects } from '../core/projects.js';
import type { Services } from '../core/services/services.js';
import type { Config } from '../config.js';
import type { SecretBox } from '../lib/secret-box.js';
import type { RuntimeCapabilities } from '../runtime/types.js';
import type { Repos } from '../store/repos/index.js';
import type { Guard } from './guard.js';
import type { Logs } from '../observability/logs/index.js';
import type { MetricQueries } from '../observability/metrics/series.js';
import type { UsageReports } from '../observability/usage/report.js';

/** What the HTTP layer is given by the composition root (src/main.ts). */
export interface HttpDeps {
  config: Config;
  access: Access;
  guard: Guard;
  auth: Auth;
  apiKeys: ApiKeys;
  team: Team;
  audit: AuditLog;
  repos: Pick<Repos, 'users' | 'workspaces' | 'idempotency' | 'deploys' | 'events' | 'services' | 'logs' | 'instances'>;
  services: Services;
  envVars: EnvVars;
  envGroups: EnvGroups;
  projects: Projects;
  datastores: Datastores;
  engine: DeployEngine;
  saveUpload: SaveUpload;
  urls: AppUrls;
  secretBox: SecretBox;
  health: { store(): Promise<void>; queue(): Promise<void>; storeKind: string; runtime: RuntimeCapabilities };
  logs: Logs;
  metrics: MetricQueries;
  /** GET /metrics (Prometheus text). */
  prometheus: { contentType: string; metrics(): Promise<string> };
  /** GET /v1/usage. */
  usage: UsageReports;
}
