import { useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, ok } from '../../api';
import { Chart } from '../../components/Chart';
import { ErrorText } from '../../components/bits';

const RANGES = [
  ['1h', 'Last hour', 3_600_000, 60],
  ['6h', 'Last 6 hours', 6 * 3_600_000, 300],
  ['24h', 'Last day', 86_400_000, 900],
  ['7d', 'Last 7 days', 7 * 86_400_000, 3600],
] as const;

function useSeries(serviceId: string, metric: 'cpu' | 'memory', range: (typeof RANGES)[number]) {
  return useQuery({
    queryKey: ['metrics', serviceId, metric, range[0]],
    refetchInterval: 30_000,
    queryFn: async () => {
      const series = await ok(
        api.GET('/v1/services/{serviceId}/metrics/history', {
          params: {
            path: { serviceId },
            query: {
              metric,
              startTime: new Date(Date.now() - range[2]).toISOString(),
              resolutionSeconds: range[3],
            },
          },
        }),
      );
      const first = series[0];
      return {
        unit: first?.unit ?? '',
        points: (first?.values ?? []).map((v) => [Date.parse(v.timestamp) / 1000, v.value] as [number, number]),
      };
    },
  });
}

/** CPU and memory over a chosen range: the API's buckets, drawn by uPlot. */
export function Metrics({ serviceId }: { serviceId: string }) {
  const [rangeKey, setRangeKey] = useState<string>('1h');
  const range = RANGES.find((r) => r[0] === rangeKey) ?? RANGES[0];
  const cpu = useSeries(serviceId, 'cpu', range);
  const memory = useSeries(serviceId, 'memory', range);
  return (
    <>
      <div className="row">
        <h2>Metrics</h2>
        <label className="inline">
          Range{' '}
          <select value={rangeKey} onChange={(e) => setRangeKey(e.target.value)}>
            {RANGES.map(([key, label]) => (
              <option key={key} value={key}>
                {label}
              </option>
            ))}
          </select>
        </label>
      </div>
      <ErrorText error={cpu.error ?? memory.error} />
      {cpu.data && <Chart title="CPU" unit={cpu.data.unit} points={cpu.data.points} />}
      {memory.data && <Chart title="Memory" unit={memory.data.unit} points={memory.data.points} />}
    </>
  );
}
