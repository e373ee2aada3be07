import { RENDER_WEBHOOK_EVENT_TYPES } from '../model/enums.js';
import type { DeployRow } from '../store/repos/deploys.js';

/**
 * A service's events as Render's clients read them (docs/api.md, "Service events"): Render's type and details, with
 * Slipway's extra facts in extra fields. What is stored stays Slipway's record; this is its reading.
 */
type Details = Record<string, unknown>;

/** Render's service event types (its eventType enum, which webhooks share). */
const RENDER_TYPES = new Set<string>(RENDER_WEBHOOK_EVENT_TYPES);
/** Slipway's names that mean one of Render's types. */
const AS_RENDER: Record<string, string> = { service_crashlooping: 'suspender_added' };

/** The type Render's clients know a stored service event by (a webhook's too); Slipway's own stay as they are. */
export const renderEventType = (type: string) => AS_RENDER[type] ?? type;

/** Whether Render has (or maps) the stored type: the others are Slipway's own, listed when asked for. */
export const isRenderServiceEvent = (type: string) => RENDER_TYPES.has(type) || type in AS_RENDER;

/**
 * The stored types a service event list reads: the `type` filter's, Slipway's names of them included; without one,
 * Render's types only, unless `includeSlipwayEvents` (then everything: undefined).
 */
export function storedTypes(filter: string[] | undefined, includeSlipwayEvents = false): string[] | undefined {
  if (filter?.length) {
    const mapped = Object.entries(AS_RENDER).flatMap(([stored, render]) => (filter.includes(render) ? [stored] : []));
    return [...filter, ...mapped];
  }
  return includeSlipwayEvents ? undefined : [...RENDER_TYPES, ...Object.keys(AS_RENDER)];
}

/** Render's deprecated integer `status` of a build or deploy that ended (Slipway's reading: 2, 3, 4). */
const STATUS_CODE = { succeeded: 2, failed: 3, canceled: 4 } as const;
type EndStatus = keyof typeof STATUS_CODE;

/**
 * Render's trigger object of a deploy (and its build), recorded with deploy_started and build_started. `firstBuild`:
 * the service had never gone live.
 */
export function renderTrigger(
  deploy: Pick<DeployRow, 'trigger' | 'commitId' | 'clearCache' | 'artifactOf'>,
  firstBuild: boolean,
) {
  return {
    firstBuild,
    envUpdated: false,
    manual: deploy.trigger === 'api',
    deployedByRender: false,
    clearCache: deploy.clearCache,
    rollback: deploy.trigger === 'rollback',
    ...(deploy.trigger === 'rollback' && deploy.artifactOf ? { rollbackTargetDeployId: deploy.artifactOf } : {}),
    ...(deploy.trigger === 'new_commit' && deploy.commitId ? { newCommit: deploy.commitId } : {}),
    // Slipway's word for it (deploy hooks have no flag of their own in Render's object).
    type: deploy.trigger,
  };
}
const NO_TRIGGER = renderTrigger({ trigger: 'api', commitId: null, clearCache: false, artifactOf: null }, false);

/** Render's failure object (it requires `evicted`; a run cut short by Slipway's crash counts as evicted). */
function failureOf(failure: unknown): Details | undefined {
  if (!failure || typeof failure !== 'object') return undefined;
  const f = failure as Details;
  return { evicted: f.interrupted === true || f.evicted === true, ...f };
}

/** A build_ended or deploy_ended's end: Render's status words and reason, Slipway's status and text beside them. */
function ended(d: Details, statusKey: 'buildStatus' | 'deployStatus') {
  const stored = typeof d.status === 'string' ? d.status : 'live';
  const end: EndStatus =
    stored === 'live' || stored === 'succeeded' ? 'succeeded' : stored === 'canceled' ? 'canceled' : 'failed';
  const failure = failureOf(d.failure);
  const { status: _status, reason, failure: _failure, ...rest } = d;
  return {
    ...rest,
    [statusKey]: end,
    status: STATUS_CODE[end],
    reason: failure ? { failure } : {},
    // The deploy's own status (live, build_failed, …) and the failure in words, as the deploy's failureReason says it.
    finalStatus: stored,
    ...(typeof reason === 'string' ? { failureReason: reason } : {}),
  };
}

/** Render's `{type, details}` of a stored service event; Slipway's own types pass through as they are. */
export function renderServiceEvent(row: { type: string; details: Details; deployId: string | null }): {
  type: string;
  details: Details;
} {
  const d: Details = { ...row.details, ...(row.deployId ? { deployId: row.deployId } : {}) };
  switch (row.type) {
    case 'deploy_started':
      return { type: row.type, details: { ...d, trigger: typeof d.trigger === 'object' ? d.trigger : NO_TRIGGER } };
    case 'build_started':
      return {
        type: row.type,
        details: { ...d, buildId: row.deployId, trigger: typeof d.trigger === 'object' ? d.trigger : NO_TRIGGER },
      };
    case 'build_ended':
      return { type: row.type, details: { buildId: row.deployId, ...ended(d, 'buildStatus') } };
    case 'deploy_ended':
      return { type: row.type, details: ended(d, 'deployStatus') };
    case 'server_failed':
    case 'cron_job_run_ended':
      return { type: row.type, details: d.reason ? { ...d, reason: failureOf(d.reason) } : d };
    case 'commit_ignored':
      return { type: row.type, details: { url: '', ...d } };
    case 'service_crashlooping':
      return { type: AS_RENDER[row.type]!, details: { actor: 'stuck_crashlooping', slipwayType: row.type, ...d } };
    default:
      return { type: row.type, details: d };
  }
}
