import { timestamp } from 'drizzle-orm/pg-core';

// Timestamps are timestamptz, read back as Date; ids are time-ordered text (lib/ids.ts).
export const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
export const createdAt = () => ts('created_at').notNull().defaultNow();
