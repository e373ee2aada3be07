import { Type } from '@sinclair/typebox';
import { renderServiceEvent } from '../../core/render-events.js';
import type { EventsAbout } from '../../core/events.js';
import type { EventRow } from '../../store/repos/events.js';
import { Timestamp } from './common.js';

/** Render's service event: every transition of a service and its deploys (docs/architecture.md, "Deploys"); a datastore's carry datastoreId. */
export const EventBody = Type.Object(
  {
    id: Type.String(),
    timestamp: Timestamp,
    serviceId: Type.Optional(Type.String()),
    datastoreId: Type.Optional(Type.String()),
    type: Type.String(),
    details: Type.Record(Type.String(), Type.Unknown()),
  },
  { title: 'serviceEvent' },
);
/** `about` is what was listed: the service or datastore the event belongs to. */
export const eventBody = (e: EventRow, about: EventsAbout) => ({
  id: e.id,
  timestamp: e.createdAt.toISOString(),
  ...about,
  // A service's events read as Render's (core/render-events.ts); a datastore's are Slipway's own.
  ...('serviceId' in about
    ? renderServiceEvent(e)
    : { type: e.type, details: { ...e.details, ...(e.deployId ? { deployId: e.deployId } : {}) } }),
});
