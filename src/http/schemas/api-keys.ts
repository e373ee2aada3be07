import { Type } from '@sinclair/typebox';
import type { ApiKeyRow } from '../../store/repos/api-keys.js';
import { Timestamp } from './common.js';

/** An API key as lists and its creation show it: never the token, which only the creation's answer carries. */
export const ApiKeyBody = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    prefix: Type.String({ description: 'The first characters of the token, to recognise it' }),
    ownerId: Type.String(),
    userId: Type.String(),
    createdAt: Timestamp,
    expiresAt: Type.Union([Timestamp, Type.Null()]),
    lastUsedAt: Type.Union([Timestamp, Type.Null()]),
  },
  { title: 'apiKey' },
);
export const apiKeyBody = (k: ApiKeyRow) => ({
  id: k.id,
  name: k.name,
  prefix: k.prefix,
  ownerId: k.workspaceId,
  userId: k.userId,
  createdAt: k.createdAt.toISOString(),
  expiresAt: k.expiresAt?.toISOString() ?? null,
  lastUsedAt: k.lastUsedAt?.toISOString() ?? null,
});
