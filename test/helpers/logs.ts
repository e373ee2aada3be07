import { expect } from 'vitest';
import type { Client, TestUser } from './client.js';

/** Every "out <n>" number a service logged (log-printer's lines; NaN for a line that is not whole), oldest first, through Render's time paging. */
export async function outNumbers(api: Client, as: TestUser, serviceId: string): Promise<number[]> {
  const numbers: number[] = [];
  let start = new Date(Date.now() - 600_000).toISOString();
  const end = new Date().toISOString();
  for (;;) {
    const res = await api.get(
      `/v1/logs?resource=${serviceId}&text=out&direction=forward&limit=100&startTime=${encodeURIComponent(start)}&endTime=${encodeURIComponent(end)}`,
      as,
    );
    expect(res.status).toBe(200);
    numbers.push(
      ...(res.body.logs as Array<{ message: string }>).map((e) => Number(/^out (\d+) /.exec(e.message)?.[1])),
    );
    if (!res.body.hasMore) return numbers;
    start = res.body.nextStartTime;
  }
}

/** A web service that is never deployed (its logs are written straight to the store): its id. */
export async function createIdleService(api: Client, as: TestUser, name: string): Promise<string> {
  const res = await api.post(
    '/v1/services',
    { type: 'web_service', name, autoDeploy: 'no', serviceDetails: { runtime: 'node' } },
    as,
  );
  expect(res.status).toBe(201);
  return res.body.service.id;
}
