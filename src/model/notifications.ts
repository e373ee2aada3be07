/** Render's notificationsToSend of a workspace: which events notify (docs/notifications.md). */
export const NOTIFICATIONS_TO_SEND = ['none', 'failure', 'all'] as const;
export type NotificationsToSend = (typeof NOTIFICATIONS_TO_SEND)[number];
/** A service's override: `default` follows its workspace. */
export const OVERRIDE_TO_SEND = ['default', ...NOTIFICATIONS_TO_SEND] as const;
export type OverrideToSend = (typeof OVERRIDE_TO_SEND)[number];
/** Render's previewNotificationsEnabled of an override: a string, `default` following the workspace. */
export const OVERRIDE_PREVIEWS = ['default', 'false', 'true'] as const;
export type OverridePreviews = (typeof OVERRIDE_PREVIEWS)[number];
/** Where a notification goes: the workspace's members by email, and its Slack incoming webhook. */
export const NOTIFICATION_CHANNELS = ['email', 'slack'] as const;
export type NotificationChannel = (typeof NOTIFICATION_CHANNELS)[number];
/** An event's weight: `failure` notifies at `failure` and `all`, `success` at `all` only. */
export type NotificationLevel = 'failure' | 'success';

/** Email delivery (docs/notifications.md, docs/configuration.md). */
export interface NotificationSettings {
  /** SLIPWAY_SMTP_URL: smtp://user:pass@host:port (smtps:// for TLS from the start); unset, no email is sent. Never logged. */
  smtpUrl: string | undefined;
  /** SLIPWAY_SMTP_FROM: the From address. */
  from: string;
}
