import { CronExpressionParser } from 'cron-parser';

/** Render's 5-field cron, or 6 fields with seconds first (a Slipway extension for sub-minute jobs). */
export function isCronSchedule(schedule: string): boolean {
  const fields = schedule.trim().split(/\s+/).length;
  if (fields !== 5 && fields !== 6) return false;
  try {
    CronExpressionParser.parse(schedule, { strict: false });
    return true;
  } catch {
    return false;
  }
}

/** The first time `schedule` fires strictly after `after`. */
export const nextCronRun = (schedule: string, after: Date): Date =>
  CronExpressionParser.parse(schedule, { currentDate: after }).next().toDate();
