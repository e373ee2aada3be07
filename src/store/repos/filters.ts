import { and, gte, lt, lte, type Column } from 'drizzle-orm';
import { firstIdAt, type IdKind } from '../../lib/ids.js';

/** `after <= column <= before`, either bound optional (undefined when neither is given). */
export const within = (column: Column, after?: Date, before?: Date) =>
  and(after ? gte(column, after) : undefined, before ? lte(column, before) : undefined);

/** How far an id's time may be from its row's timestamp: the id is made in JS, the column (now()) at its transaction. */
const ID_SLACK_MS = 5 * 60_000;

/**
 * A time window as a range of ids too, for tables that grow without end (events, audit logs): ids sort by creation
 * time (lib/ids.ts), so the keyset walk on (owner, id) starts and stops about at the window (give or take
 * ID_SLACK_MS, so no row of it is left out) instead of reading every newer, or older, row on the way.
 */
export const idsWithin = (id: Column, kind: IdKind, after?: Date, before?: Date) =>
  and(
    after ? gte(id, firstIdAt(kind, after.getTime() - ID_SLACK_MS)) : undefined,
    before ? lt(id, firstIdAt(kind, before.getTime() + ID_SLACK_MS)) : undefined,
  );

/** Render's list filters on creation/update time, plus the keyset cursor and page size. */
export interface ListWindow {
  createdAfter?: Date;
  createdBefore?: Date;
  updatedAfter?: Date;
  updatedBefore?: Date;
  beforeId?: string;
  limit: number;
}
