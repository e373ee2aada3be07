import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok } from '../../api';
import { ActionForm, ErrorText } from '../../components/bits';

interface Current {
  enabled: boolean;
  min: number;
  max: number;
  criteria: { cpu: { enabled: boolean; percentage: number }; memory: { enabled: boolean; percentage: number } };
}

/** Autoscaling on measured CPU and memory between a minimum and a maximum instance count (Render's body). */
export function Autoscaling({ serviceId, current }: { serviceId: string; current?: Current }) {
  const queryClient = useQueryClient();
  const [form, setForm] = useState({
    min: current?.min ?? 1,
    max: current?.max ?? 3,
    cpu: current?.criteria.cpu.percentage ?? 70,
    memory: current?.criteria.memory.percentage ?? 70,
  });
  const path = { params: { path: { serviceId } } };
  const refresh = () => queryClient.invalidateQueries({ queryKey: ['service', serviceId] });
  const enable = useMutation({
    mutationFn: () =>
      ok(
        api.PUT('/v1/services/{serviceId}/autoscaling', {
          ...path,
          body: {
            enabled: true,
            min: form.min,
            max: form.max,
            criteria: {
              cpu: { enabled: form.cpu > 0, percentage: form.cpu },
              memory: { enabled: form.memory > 0, percentage: form.memory },
            },
          },
        }),
      ),
    onSuccess: () => refresh(),
  });
  const disable = useMutation({
    mutationFn: () => ok(api.DELETE('/v1/services/{serviceId}/autoscaling', path)),
    onSuccess: () => refresh(),
  });
  const number = (key: keyof typeof form, label: string, min: number, max: number) => (
    <label>
      {label}
      <input
        type="number"
        min={min}
        max={max}
        required
        value={form[key]}
        onChange={(e) => setForm({ ...form, [key]: Number(e.target.value) })}
      />
    </label>
  );
  return (
    <>
      <h2>Autoscaling</h2>
      <p className="muted">{current?.enabled ? `On: ${current.min} to ${current.max} instances.` : 'Off.'}</p>
      <ActionForm className="row wrap" onSubmit={() => enable.mutate()}>
        {number('min', 'Minimum', 1, 100)}
        {number('max', 'Maximum', 1, 100)}
        {number('cpu', 'CPU target %', 0, 100)}
        {number('memory', 'Memory target %', 0, 100)}
        <button disabled={enable.isPending}>{current?.enabled ? 'Update autoscaling' : 'Turn autoscaling on'}</button>
        {current?.enabled && (
          <button type="button" disabled={disable.isPending} onClick={() => disable.mutate()}>
            Turn it off
          </button>
        )}
      </ActionForm>
      <ErrorText error={enable.error ?? disable.error} />
    </>
  );
}
