import { Type } from '@sinclair/typebox';
import type { LogStreamOverride, OwnerLogStream } from '../../core/log-streams/settings.js';
import { LOG_STREAM_SETTINGS } from '../../model/enums.js';
import { literalUnion } from './common.js';

export const LogStreamSetting = literalUnion(LOG_STREAM_SETTINGS, { description: 'Whether to send logs or drop them' });
const Endpoint = Type.String({ minLength: 1, maxLength: 261, description: 'HOST:PORT of a TLS syslog endpoint' });
const Token = Type.String({
  maxLength: 256,
  description: 'Write-only: never returned. Sent in each message as the SD element [TOKEN@41058]; "" removes it',
});

/** Render's PUT /logs/streams/owner/{ownerId} body. */
export const OwnerLogStreamInput = Type.Object({
  endpoint: Type.Optional(Endpoint),
  token: Type.Optional(Token),
  preview: LogStreamSetting,
});
/** Render's PUT /logs/streams/resource/{resourceId} body. */
export const LogStreamOverrideInput = Type.Object({
  endpoint: Type.Optional(Endpoint),
  token: Type.Optional(Token),
  setting: LogStreamSetting,
});

/** Render's owner log stream setting: never the token. */
export const OwnerLogStreamBody = Type.Object(
  { ownerId: Type.String(), endpoint: Type.Optional(Type.String()), preview: LogStreamSetting },
  { title: 'ownerLogStreamSetting' },
);
export const ownerLogStreamBody = (s: OwnerLogStream) => ({
  ownerId: s.workspaceId,
  ...(s.endpoint ? { endpoint: s.endpoint } : {}),
  preview: s.preview,
});

/** Render's resource log stream override: an endpoint only when it sends. */
export const LogStreamOverrideBody = Type.Object(
  { resourceId: Type.String(), endpoint: Type.Optional(Type.String()), setting: LogStreamSetting },
  { title: 'resourceLogStreamSetting' },
);
export const logStreamOverrideBody = (o: LogStreamOverride) => ({
  resourceId: o.resourceId,
  ...(o.endpoint ? { endpoint: o.endpoint } : {}),
  setting: o.setting,
});
