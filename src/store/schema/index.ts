/**
 * The store's tables, one file per aggregate; drizzle-kit reads this file (drizzle.config.ts) and the repositories
 * import from it. columns.ts holds the column helpers the files share.
 */
export * from './accounts.js';
export * from './workspaces.js';
export * from './requests.js';
export * from './projects.js';
export * from './services.js';
export * from './deploys.js';
export * from './events.js';
export * from './env.js';
export * from './datastores.js';
export * from './observability.js';
export * from './usage.js';
export * from './billing.js';
export * from './webhooks.js';
export * from './blueprints.js';
export * from './github.js';
export * from './domains.js';
export * from './registry-credentials.js';
export * from './jobs.js';
export * from './log-streams.js';
export * from './metrics-streams.js';
export * from './notifications.js';
export * from './disks.js';
