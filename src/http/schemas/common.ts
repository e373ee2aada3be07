import { Type, type SchemaOptions, type TSchema } from '@sinclair/typebox';
import { decodeCursor } from '../../lib/cursor.js';
import { badRequest } from '../../lib/errors.js';
import { NAME_PATTERN } from '../../lib/names.js';
import { ROLES } from '../../model/enums.js';

export const ErrorBody = Type.Object(
  {
    id: Type.String({ description: 'The request id (also in the Request-Id header)' }),
    code: Type.String({ description: 'Stable error code, e.g. validation_failed' }),
    message: Type.String(),
    details: Type.Optional(Type.Array(Type.Object({ field: Type.String(), message: Type.String() }))),
  },
  { title: 'error' },
);

export const Timestamp = Type.String({ format: 'date-time' });
/** An optional Timestamp query parameter as a Date. */
export const toDate = (value: string | undefined) => (value ? new Date(value) : undefined);

/** Render's list filters on creation and update time, as query parameters (`listWindow` reads them). */
export const TimeFilters = {
  createdBefore: Type.Optional(Timestamp),
  createdAfter: Type.Optional(Timestamp),
  updatedBefore: Type.Optional(Timestamp),
  updatedAfter: Type.Optional(Timestamp),
};

/**
 * Render's list filters on creation and update time, the keyset cursor and the page size, as a repository takes them
 * (store/repos/filters.ts ListWindow). An inverted range is a 400, not an empty page.
 */
export function listWindow(q: {
  createdAfter?: string;
  createdBefore?: string;
  updatedAfter?: string;
  updatedBefore?: string;
  cursor?: string;
  limit?: number;
}) {
  const window = {
    createdAfter: toDate(q.createdAfter),
    createdBefore: toDate(q.createdBefore),
    updatedAfter: toDate(q.updatedAfter),
    updatedBefore: toDate(q.updatedBefore),
    beforeId: decodeCursor(q.cursor),
    limit: q.limit ?? DEFAULT_LIMIT,
  };
  for (const field of ['created', 'updated'] as const) {
    const after = window[`${field}After`];
    const before = window[`${field}Before`];
    if (after && before && after > before) throw badRequest(`${field}After must not be after ${field}Before`);
  }
  return window;
}
/** `anyOf` the tuple's values as constants: an enum is written once, as a const tuple (store/enums.ts). */
export const literalUnion = <T extends string>(values: readonly T[], options?: SchemaOptions) =>
  Type.Union(
    values.map((v) => Type.Literal(v)),
    options,
  );
export const Role = literalUnion(ROLES);
export const Email = Type.String({ format: 'email', maxLength: 254 });
/** Every name a client gives (lib/names.ts): one schema for every route that takes one. */
export const Name = Type.String({ minLength: 1, maxLength: 100, pattern: NAME_PATTERN });
/** Path ids: unknown or malformed ids both answer 404 from the lookup. */
export const IdParam = Type.String({ minLength: 1, maxLength: 64 });
export const OwnerIdQuery = Type.Optional(
  Type.String({ maxLength: 64, description: 'Workspace (tea-…); default: your default workspace' }),
);

/** `?limit=&cursor=` as Render: limit 1..100, default 20; cursor opaque. */
export const DEFAULT_LIMIT = 20;
export const ListQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: DEFAULT_LIMIT })),
  cursor: Type.Optional(Type.String({ maxLength: 200 })),
};

/** A list query parameter (`?name=a&name=b`), at most 50 values. */
export const StringList = Type.Optional(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 50 }));
/** Render sends lists comma-separated (`?projectId=a,b`); repeated keys work too. */
export const splitList = (values: string[] | undefined) => values?.flatMap((v) => v.split(',')).filter(Boolean);

/** Render's list envelope item: `{cursor, <name>: item}`. */
export const Envelope = <K extends string, T extends TSchema>(name: K, item: T) =>
  Type.Array(
    Type.Object({ cursor: Type.String(), [name]: item } as { cursor: ReturnType<typeof Type.String> } & Record<K, T>),
  );

/** Slipway's: the blueprint that manages a resource. */
export const ManagedBy = Type.Optional(
  Type.Object({ id: Type.String(), name: Type.String() }, { description: 'The blueprint that manages it' }),
);

export const NoContent = Type.Null({ description: 'No content' });
