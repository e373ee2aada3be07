import { sql } from 'drizzle-orm';
import { index, integer, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, ts } from './columns.js';
import { services } from './services.js';
import { workspaces } from './workspaces.js';

// Custom domains, their ACME certificates, challenges and accounts.

/**
 * A custom domain of a service (Render's customDomain); routable once its DNS points at Slipway and proves the
 * workspace owns it (core/domains). Any workspace may add any name; at most one row per name is verified.
 */
export const customDomains = pgTable(
  'custom_domains',
  {
    id: text('id').primaryKey(),
    serviceId: text('service_id')
      .notNull()
      .references(() => services.id, { onDelete: 'cascade' }),
    /** The service's workspace, whose TXT token proves ownership (kept here for the per-workspace unique index). */
    workspaceId: text('workspace_id')
      .notNull()
      .references(() => workspaces.id, { onDelete: 'cascade' }),
    /** Lowercase, punycode: once per workspace; verified in one workspace at most. */
    name: text('name').notNull(),
    /** apex | subdomain. */
    domainType: text('domain_type').notNull(),
    publicSuffix: text('public_suffix').notNull(),
    /** Set on the twin Slipway adds (www. or apex): it redirects (301) to this name. */
    redirectForName: text('redirect_for_name'),
    /** verified | unverified. */
    verificationStatus: text('verification_status').notNull().default('unverified'),
    verifiedAt: ts('verified_at'),
    /** Why the last check did not verify it (null: verified, or not checked yet). */
    unverifiedReason: text('unverified_reason'),
    /** When the background check next looks (unverified: with backoff; verified: daily). */
    nextCheckAt: ts('next_check_at').notNull().defaultNow(),
    /** Failed checks in a row (the backoff's exponent). */
    failedChecks: integer('failed_checks').notNull().default(0),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex('custom_domains_workspace_name_key').on(t.workspaceId, t.name),
    // Two checks that both find proof cannot both win: the second's update fails on this index.
    uniqueIndex('custom_domains_verified_name_key')
      .on(t.name)
      .where(sql`${t.verificationStatus} = 'verified'`),
    index('custom_domains_service_idx').on(t.serviceId, t.id),
    index('custom_domains_next_check_idx').on(t.nextCheckAt),
  ],
);

/** A custom domain's TLS certificate from ACME (core/domains/certificates.ts); the private key sealed by the secret box. */
export const certificates = pgTable(
  'certificates',
  {
    domainId: text('domain_id')
      .primaryKey()
      .references(() => customDomains.id, { onDelete: 'cascade' }),
    name: text('name').notNull(),
    /** none (not issued yet) | issued; a failed renewal keeps serving the issued one. */
    status: text('status').notNull().default('none'),
    certPem: text('cert_pem'),
    keySealed: text('key_sealed'),
    notBefore: ts('not_before'),
    notAfter: ts('not_after'),
    /** When to order next: the first order, a renewal, or a retry after a failure. */
    dueAt: ts('due_at').notNull().defaultNow(),
    failures: integer('failures').notNull().default(0),
    lastError: text('last_error'),
    /** One process orders at a time: the claim ends here (a crashed orderer's claim lapses). */
    claimedUntil: ts('claimed_until'),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('certificates_due_idx').on(t.dueAt)],
);

/** http-01 answers in flight, so whichever router process the ACME server reaches can give them. */
export const acmeChallenges = pgTable('acme_challenges', {
  token: text('token').primaryKey(),
  keyAuthorization: text('key_authorization').notNull(),
  createdAt: createdAt(),
});

/** The ACME account key per directory, sealed by the secret box. */
export const acmeAccounts = pgTable('acme_accounts', {
  directoryUrl: text('directory_url').primaryKey(),
  keySealed: text('key_sealed').notNull(),
  createdAt: createdAt(),
});
