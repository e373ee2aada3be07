import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, items, ok } from '../../api';
import { ActionForm, ConfirmButton, ErrorText } from '../../components/bits';
import { ago, bytes } from '../../lib/format';
import { useWorkspace } from '../../session';

/** The service's persistent disk: add one, grow it, its snapshots (take one, restore one). */
export function Disk({ serviceId }: { serviceId: string }) {
  const workspace = useWorkspace();
  const queryClient = useQueryClient();
  const [form, setForm] = useState({ name: 'data', sizeGB: 1, mountPath: '/var/data' });
  const disks = useQuery({
    queryKey: ['disk', serviceId],
    queryFn: async () =>
      items(await ok(api.GET('/v1/disks', { params: { query: { serviceId: [serviceId], limit: 1 } } })), 'disk'),
  });
  const disk = disks.data?.[0];
  const snapshots = useQuery({
    queryKey: ['snapshots', disk?.id],
    enabled: !!disk,
    queryFn: () => ok(api.GET('/v1/disks/{diskId}/snapshots', { params: { path: { diskId: disk!.id } } })),
  });
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['disk', serviceId] });
  const create = useMutation({
    mutationFn: () => ok(api.POST('/v1/disks', { body: { ...form, serviceId } })),
    onSuccess: () => refresh(),
  });
  const snapshot = useMutation({
    mutationFn: (diskId: string) => ok(api.POST('/v1/disks/{diskId}/snapshots', { params: { path: { diskId } } })),
    onSuccess: () => queryClient.invalidateQueries({ queryKey: ['snapshots', disk?.id] }),
  });
  const restore = useMutation({
    mutationFn: ({ diskId, snapshotKey }: { diskId: string; snapshotKey: string }) =>
      ok(api.POST('/v1/disks/{diskId}/snapshots/restore', { params: { path: { diskId } }, body: { snapshotKey } })),
    onSuccess: () => refresh(),
  });
  const remove = useMutation({
    mutationFn: (diskId: string) => ok(api.DELETE('/v1/disks/{diskId}', { params: { path: { diskId } } })),
    onSuccess: () => refresh(),
  });
  const canAct = workspace.can('developer');
  return (
    <>
      <h2>Disk</h2>
      <ErrorText error={disks.error ?? create.error ?? snapshot.error ?? restore.error ?? remove.error} />
      {disk ? (
        <>
          <p>
            <strong>{disk.name}</strong>: {disk.sizeGB} GB at <code>{disk.mountPath}</code>
          </p>
          {canAct && (
            <div className="row wrap">
              <button type="button" disabled={snapshot.isPending} onClick={() => snapshot.mutate(disk.id)}>
                Take a snapshot
              </button>
              <ConfirmButton
                label="Delete disk"
                danger
                question={`Delete ${disk.name}, its files and its snapshots? The service runs on without it.`}
                onConfirm={() => remove.mutate(disk.id)}
              />
            </div>
          )}
          <h3>Snapshots</h3>
          <ul className="list" aria-label="Snapshots">
            {(snapshots.data ?? []).map((s) => (
              <li key={s.snapshotKey}>
                {s.kind}{' '}
                <span className="muted">
                  {ago(s.createdAt)}, {bytes(s.sizeBytes)}
                </span>
                {canAct && (
                  <ConfirmButton
                    label="Restore"
                    question="Restore this snapshot? The service stops, the disk becomes the snapshot, and it starts again."
                    onConfirm={() => restore.mutate({ diskId: disk.id, snapshotKey: s.snapshotKey })}
                  />
                )}
              </li>
            ))}
            {snapshots.data?.length === 0 && <li className="muted">No snapshots yet (one is taken daily).</li>}
          </ul>
        </>
      ) : (
        !disks.isPending &&
        (canAct ? (
          <ActionForm className="row wrap" onSubmit={() => create.mutate()}>
            <label>
              Name
              <input required value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
            </label>
            <label>
              Size (GB)
              <input
                type="number"
                min={1}
                max={1024}
                value={form.sizeGB}
                onChange={(e) => setForm({ ...form, sizeGB: Number(e.target.value) })}
              />
            </label>
            <label>
              Mount path
              <input
                required
                value={form.mountPath}
                onChange={(e) => setForm({ ...form, mountPath: e.target.value })}
              />
            </label>
            <button className="primary" disabled={create.isPending}>
              Add disk
            </button>
          </ActionForm>
        ) : (
          <p className="empty">No disk.</p>
        ))
      )}
    </>
  );
}
