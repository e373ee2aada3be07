import { Type } from '@sinclair/typebox';
import { NOTIFICATIONS_TO_SEND, OVERRIDE_PREVIEWS, OVERRIDE_TO_SEND } from '../../model/notifications.js';
import { literalUnion } from './common.js';

/** Render's notificationsToSend (workspace), and an override's (with `default`). */
export const NotificationsToSend = literalUnion(NOTIFICATIONS_TO_SEND);
export const OverrideToSend = literalUnion(OVERRIDE_TO_SEND);
/** Render's override previewNotificationsEnabled: a string, `default` following the workspace. */
export const OverridePreviews = literalUnion(OVERRIDE_PREVIEWS);

/** Render's notification settings of an owner (workspace). */
export const OwnerSettingsBody = Type.Object({
  ownerId: Type.String(),
  slackEnabled: Type.Boolean({ description: 'A Slack incoming webhook is set (Slipway: slackWebhookUrl)' }),
  emailEnabled: Type.Boolean(),
  previewNotificationsEnabled: Type.Boolean(),
  notificationsToSend: NotificationsToSend,
});

export const OwnerSettingsPatch = Type.Object({
  emailEnabled: Type.Optional(Type.Boolean()),
  previewNotificationsEnabled: Type.Optional(Type.Boolean()),
  notificationsToSend: Type.Optional(NotificationsToSend),
  slackWebhookUrl: Type.Optional(
    Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()], {
      description:
        "Slipway's: a Slack-compatible incoming webhook URL notifications are POSTed to (a secret: never read back); null removes it",
    }),
  ),
});

/** Render's override of a service. */
export const OverrideBody = Type.Object({
  serviceId: Type.String(),
  previewNotificationsEnabled: OverridePreviews,
  notificationsToSend: OverrideToSend,
});

export const OverridePatch = Type.Object({
  previewNotificationsEnabled: Type.Optional(OverridePreviews),
  notificationsToSend: Type.Optional(OverrideToSend),
});

/** Render's list item: `{cursor, override: {type, serviceId, …}}`. */
export const OverrideListItem = Type.Object({
  cursor: Type.String(),
  override: Type.Object({
    type: Type.Literal('service'),
    serviceId: Type.String(),
    previewNotificationsEnabled: OverridePreviews,
    notificationsToSend: OverrideToSend,
  }),
});
