import type { NotificationSettings } from '../model/notifications.js';

/** SLIPWAY_SMTP_URL and SLIPWAY_SMTP_FROM. An error names the variable, never its value (it holds the password). */
export function notificationSettings(env: Record<string, string | undefined>): NotificationSettings {
  const smtpUrl = env.SLIPWAY_SMTP_URL || undefined;
  if (smtpUrl) {
    let url: URL | undefined;
    try {
      url = new URL(smtpUrl);
    } catch {
      // reported below
    }
    if (!url || (url.protocol !== 'smtp:' && url.protocol !== 'smtps:') || !url.hostname)
      throw new Error('SLIPWAY_SMTP_URL must be smtp://[user:password@]host[:port] or smtps://…');
  }
  return { smtpUrl, from: env.SLIPWAY_SMTP_FROM || 'Slipway <slipway@localhost>' };
}
