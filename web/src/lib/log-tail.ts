import { useEffect, useState } from 'react';
import { apiError } from '../api';

export interface LogEntry {
  id: string;
  message: string;
  timestamp: string;
  labels: Array<{ name: string; value: string }>;
}

export const label = (entry: LogEntry, name: string) => entry.labels.find((l) => l.name === name)?.value;

async function refusal(params: URLSearchParams): Promise<string | null> {
  const probe = new URLSearchParams(params);
  probe.delete('afterId');
  probe.set('limit', '1');
  try {
    const response = await fetch(`/v1/logs?${probe}`, { credentials: 'same-origin' });
    if (response.ok || response.status >= 500) return null;
    return apiError(response.status, await response.json().catch(() => undefined)).message;
  } catch {
    return null;
  }
}

/** What a view keeps: the newest lines; older ones are in the log search (GET /v1/logs). */
const KEEP = 5000;
const MAX_BACKOFF_MS = 5000;

/**
 * Follows /v1/logs/subscribe (the same stream `slipway logs -f` reads): a dropped connection (Slipway restarting, the
 * network) is reopened after the last entry received, so nothing is missed or repeated. `query` is the stream's
 * filters; null pauses. The browser sends the session cookie and its Origin with the upgrade (Slipway's CSRF rule).
 */
export function useLogTail(query: URLSearchParams | null) {
  const [entries, setEntries] = useState<LogEntry[]>([]);
  const [state, setState] = useState<'connecting' | 'live' | 'ended' | 'reconnecting'>('connecting');
  const [error, setError] = useState<string | null>(null);
  const key = query?.toString() ?? null;
  useEffect(() => {
    if (key === null) return;
    setEntries([]);
    setError(null);
    setState('connecting');
    let socket: WebSocket | undefined;
    let lastId: string | undefined;
    let backoff = 250;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let stopped = false;
    let pending: LogEntry[] = [];
    let frame = 0;
    // Lines are added once per animation frame: a burst of thousands costs one render, not thousands.
    const flush = () => {
      frame = 0;
      const batch = pending;
      pending = [];
      setEntries((old) => {
        const next = old.concat(batch);
        return next.length > KEEP ? next.slice(next.length - KEEP) : next;
      });
    };
    const open = () => {
      const params = new URLSearchParams(key);
      if (lastId) {
        params.delete('startTime');
        params.set('afterId', lastId);
      }
      const url = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/v1/logs/subscribe?${params}`;
      socket = new WebSocket(url);
      let opened = false;
      socket.onopen = () => {
        opened = true;
        backoff = 250;
        setState('live');
      };
      socket.onmessage = (event) => {
        const entry = JSON.parse(String(event.data)) as LogEntry;
        lastId = entry.id;
        pending.push(entry);
        if (!frame) frame = requestAnimationFrame(flush);
      };
      socket.onclose = (event) => {
        if (stopped) return;
        if (event.code === 1000) return setState('ended');
        setState('reconnecting');
        const retry = () => {
          if (stopped) return;
          timer = setTimeout(open, backoff);
          backoff = Math.min(backoff * 2, MAX_BACKOFF_MS);
        };
        if (opened) return retry();
        // A browser does not show why an upgrade was refused: the same query over HTTP says it. A refusal (4xx) is
        // the API's answer, not a restart, so it is shown and the tail stops.
        void refusal(params).then((err) => {
          if (!err) return retry();
          setError(err);
          setState('ended');
        });
      };
    };
    open();
    return () => {
      stopped = true;
      clearTimeout(timer);
      cancelAnimationFrame(frame);
      socket?.close(1000);
    };
  }, [key]);
  return { entries, state, error };
}
