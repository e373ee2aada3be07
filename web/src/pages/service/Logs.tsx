import { useState } from 'react';
import { ActionForm, ErrorText } from '../../components/bits';
import { LogView } from '../../components/LogView';
import { useLogTail } from '../../lib/log-tail';

const SINCE = [
  ['5m', 'last 5 minutes', 5 * 60_000],
  ['1h', 'last hour', 3_600_000],
  ['24h', 'last 24 hours', 86_400_000],
] as const;

/** The live tail over the WebSocket, with the stream's own filters: level, type, instance, text and a start time. */
export function Logs({ serviceId }: { serviceId: string }) {
  const [filters, setFilters] = useState({ since: '1h', level: '', type: '', instance: '', text: '' });
  // Made when the filters are applied: a new query is a new connection.
  const [query, setQuery] = useState(() => queryOf(serviceId, filters));
  const tail = useLogTail(query);
  const set = (key: keyof typeof filters) => (e: { target: { value: string } }) =>
    setFilters({ ...filters, [key]: e.target.value });
  return (
    <>
      <ActionForm className="row wrap filters" onSubmit={() => setQuery(queryOf(serviceId, filters))}>
        <label>
          Search
          <input type="search" value={filters.text} onChange={set('text')} maxLength={200} />
        </label>
        <label>
          Level
          <select value={filters.level} onChange={set('level')}>
            <option value="">all</option>
            <option value="error">error</option>
            <option value="warning">warning</option>
            <option value="info">info</option>
            <option value="debug">debug</option>
          </select>
        </label>
        <label>
          Type
          <select value={filters.type} onChange={set('type')}>
            <option value="">all</option>
            <option value="app">app</option>
            <option value="build">build</option>
            <option value="request">request</option>
          </select>
        </label>
        <label>
          Instance
          <input value={filters.instance} onChange={set('instance')} placeholder="any" maxLength={100} />
        </label>
        <label>
          From
          <select value={filters.since} onChange={set('since')}>
            {SINCE.map(([value, text]) => (
              <option key={value} value={value}>
                {text}
              </option>
            ))}
          </select>
        </label>
        <button>Apply</button>
        <span className={`badge ${tail.state === 'live' ? 'good' : 'busy'}`} aria-live="polite">
          {tail.state}
        </span>
      </ActionForm>
      <ErrorText error={tail.error ? new Error(tail.error) : null} />
      <LogView entries={tail.entries} label="Service logs" showInstance empty="No lines in this window yet." />
    </>
  );
}

function queryOf(serviceId: string, f: { since: string; level: string; type: string; instance: string; text: string }) {
  const ms = SINCE.find(([value]) => value === f.since)?.[2] ?? 3_600_000;
  const query = new URLSearchParams({ resource: serviceId, startTime: new Date(Date.now() - ms).toISOString() });
  for (const key of ['level', 'type', 'instance', 'text'] as const) if (f[key]) query.set(key, f[key]);
  return query;
}
