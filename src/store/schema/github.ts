import { boolean, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt } from './columns.js';
import { workspaces } from './workspaces.js';

// The GitHub App: installations and the webhook deliveries seen.

/** A GitHub App installation, linked to the one workspace whose admin installed it (core/github). */
export const githubInstallations = pgTable(
  'github_installations',
  {
    /** GitHub's installation id. */
    installationId: text('installation_id').primaryKey(),
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** The account the App is installed on: its login and type (User | Organization). */
    account: text('account').notNull(),
    accountType: text('account_type').notNull(),
    /** GitHub's `repository_selection`: all | selected. */
    repositorySelection: text('repository_selection').notNull(),
    suspended: boolean('suspended').notNull().default(false),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex('github_installations_workspace_key').on(t.workspaceId)],
);

/** GitHub webhook deliveries seen (X-GitHub-Delivery): a redelivery is recognised and ignored. */
export const githubDeliveries = pgTable('github_deliveries', {
  id: text('id').primaryKey(),
  receivedAt: createdAt(),
});
