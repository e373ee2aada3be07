import { and, gte, lte, type Column } from 'drizzle-orm';

/** `after <= column <= before`, either bound optional (undefined when neither is given). */
export const within = (column: Column, after?: Date, before?: Date) =>
  and(after ? gte(column, after) : undefined, before ? lte(column, before) : undefined);
