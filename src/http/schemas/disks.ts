import { Type } from '@sinclair/typebox';
import type { DiskRow, DiskSnapshotRow } from '../../store/repos/disks.js';
import { Name, Timestamp } from './common.js';

/** Render takes whole GB from 1; a machine's disks bound the rest (the image is sparse: it takes what is written). */
export const SizeGB = Type.Integer({ minimum: 1, maximum: 1024, description: 'Whole GB; a disk only grows' });
export const MountPath = Type.String({
  minLength: 2,
  maxLength: 255,
  description: 'An absolute path in the instance, outside the system dirs (e.g. /var/data)',
});

/** Render's `disk` (diskDetails). */
export const DiskBody = Type.Object(
  {
    id: Type.String(),
    name: Type.String(),
    sizeGB: Type.Integer(),
    mountPath: Type.String(),
    serviceId: Type.String(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  },
  { title: 'disk' },
);
export const diskBody = (d: DiskRow) => ({
  id: d.id,
  name: d.name,
  sizeGB: d.sizeGb,
  mountPath: d.mountPath,
  serviceId: d.serviceId,
  createdAt: d.createdAt.toISOString(),
  updatedAt: d.updatedAt.toISOString(),
});

export const DiskPOST = Type.Object({
  name: Name,
  sizeGB: SizeGB,
  mountPath: MountPath,
  serviceId: Type.String({ maxLength: 64 }),
});
export const DiskPATCH = Type.Object({
  name: Type.Optional(Name),
  sizeGB: Type.Optional(SizeGB),
  mountPath: Type.Optional(MountPath),
});

/** Render's `diskSnapshot`; `kind` and `sizeBytes` are Slipway's. */
export const SnapshotBody = Type.Object(
  {
    snapshotKey: Type.String(),
    createdAt: Timestamp,
    kind: Type.Union([Type.Literal('daily'), Type.Literal('manual')]),
    sizeBytes: Type.Integer(),
  },
  { title: 'diskSnapshot' },
);
export const snapshotBody = (s: DiskSnapshotRow) => ({
  snapshotKey: s.id,
  createdAt: s.createdAt.toISOString(),
  kind: s.kind,
  sizeBytes: s.sizeBytes,
});
export const SnapshotRestorePOST = Type.Object({
  snapshotKey: Type.String({ minLength: 1, maxLength: 64 }),
  instanceId: Type.Optional(Type.String({ maxLength: 64, description: "Render's; a disk here has one instance" })),
});
