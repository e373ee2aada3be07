import type { SecretBox } from '../../lib/secret-box.js';
import type { NotificationsToSend, OverridePreviews, OverrideToSend } from '../../model/notifications.js';
import type {
  NotificationOverrideRow,
  NotificationRepo,
  NotificationSettingsRow,
  ServiceOverride,
} from '../../store/repos/notifications.js';
import { checkUrl } from '../webhooks/webhooks.js';

/** A workspace's settings as Render reads them (Render's defaults where none were set). */
export interface OwnerSettings {
  ownerId: string;
  emailEnabled: boolean;
  slackEnabled: boolean;
  previewNotificationsEnabled: boolean;
  notificationsToSend: NotificationsToSend;
}
export interface OwnerSettingsPatch {
  emailEnabled?: boolean;
  previewNotificationsEnabled?: boolean;
  notificationsToSend?: NotificationsToSend;
  /** Slipway's: the Slack incoming webhook (a secret, never read back); null removes it. */
  slackWebhookUrl?: string | null;
}
export interface ServiceOverrideView {
  serviceId: string;
  previewNotificationsEnabled: OverridePreviews;
  notificationsToSend: OverrideToSend;
}
export type OverridePatch = Partial<Omit<ServiceOverrideView, 'serviceId'>>;

/** Render's defaults: email on, Slack until connected off, failures only, preview services quiet. */
const ownerView = (ownerId: string, row: NotificationSettingsRow | undefined): OwnerSettings => ({
  ownerId,
  emailEnabled: row?.emailEnabled ?? true,
  slackEnabled: Boolean(row?.sealedSlackUrl),
  previewNotificationsEnabled: row?.previewNotificationsEnabled ?? false,
  notificationsToSend: row?.notificationsToSend ?? 'failure',
});
const overrideView = (serviceId: string, row: NotificationOverrideRow | null | undefined): ServiceOverrideView => ({
  serviceId,
  previewNotificationsEnabled: row?.previewNotificationsEnabled ?? 'default',
  notificationsToSend: row?.notificationsToSend ?? 'default',
});

/** Render's notification settings of workspaces and their services' overrides (docs/notifications.md). */
export function createNotificationSettings(deps: { repo: NotificationRepo; box: SecretBox; allowPrivate: boolean }) {
  const { repo } = deps;
  return {
    get: async (workspaceId: string) => ownerView(workspaceId, await repo.settings(workspaceId)),
    async update(workspaceId: string, patch: OwnerSettingsPatch): Promise<OwnerSettings> {
      const { slackWebhookUrl, ...rest } = patch;
      // The Slack URL is a tenant's target: checked as a webhook's is (http(s), no credentials, no private address).
      const sealedSlackUrl =
        slackWebhookUrl === undefined
          ? {}
          : {
              sealedSlackUrl:
                slackWebhookUrl === null
                  ? null
                  : deps.box.seal(checkUrl(slackWebhookUrl, deps.allowPrivate, 'slackWebhookUrl')),
            };
      return ownerView(workspaceId, await repo.putSettings(workspaceId, { ...rest, ...sealedSlackUrl }));
    },
    async override(serviceId: string): Promise<ServiceOverrideView> {
      const [row] = await repo.listOverrides({ serviceIds: [serviceId], limit: 1 });
      return overrideView(serviceId, row?.override);
    },
    updateOverride: async (service: { id: string; workspaceId: string }, patch: OverridePatch) =>
      overrideView(service.id, await repo.putOverride(service.id, service.workspaceId, patch)),
    async listOverrides(q: Parameters<NotificationRepo['listOverrides']>[0]) {
      return (await repo.listOverrides(q)).map((r: ServiceOverride) => overrideView(r.serviceId, r.override));
    },
  };
}
export type NotificationSettingsApi = ReturnType<typeof createNotificationSettings>;
