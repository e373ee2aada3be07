import { and, gte, lte, type Column } from 'drizzle-orm';

/** `after <= column <= before`, either bound optional (undefined when neither is given). */
export const within = (column: Column, after?: Date, before?: Date) =>
  and(after ? gte(column, after) : undefined, before ? lte(column, before) : undefined);

/** Render's list filters on creation/update time, plus the keyset cursor and page size. */
export interface ListWindow {
  createdAfter?: Date;
  createdBefore?: Date;
  updatedAfter?: Date;
  updatedBefore?: Date;
  beforeId?: string;
  limit: number;
}
