import { Redis } from 'ioredis';

/** Where a Redis-protocol server answers: over TCP, or (a local server, for Slipway only) on a unix socket. */
export interface TcpAddress {
  host: string;
  port: number;
  tls: boolean;
}
export type ServerAddress = TcpAddress | { path: string };

export interface Login {
  user: string;
  password: string;
}

const DEFAULT_TIMEOUT_MS = 2000;

/**
 * Opens one connection, logs in, runs `fn` and always closes it. No retries and no offline queue:
 * a control plane wants an answer (or an error) now, not a client that waits for the server to come back.
 * The login is an explicit AUTH rather than a client option, so a refused login is an error of this call.
 */
export async function withConnection<T>(
  address: ServerAddress,
  login: Login | undefined,
  fn: (redis: Redis) => Promise<T>,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<T> {
  const redis = new Redis({
    ...('path' in address
      ? { path: address.path }
      : { host: address.host, port: address.port, ...(address.tls ? { tls: {} } : {}) }),
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableReadyCheck: false,
    enableOfflineQueue: false,
  });
  redis.on('error', () => undefined); // the failing command rejects with the same error
  try {
    await redis.connect();
    if (login) await redis.call('AUTH', login.user, login.password);
    return await fn(redis);
  } finally {
    redis.disconnect();
  }
}

/** Logs in and gets PONG within the timeout. */
export async function answersPing(
  address: ServerAddress,
  login: Login,
  timeoutMs = DEFAULT_TIMEOUT_MS,
): Promise<boolean> {
  try {
    return (await withConnection(address, login, (redis) => redis.ping(), timeoutMs)) === 'PONG';
  } catch {
    return false;
  }
}

/** `redis_version` (Valkey reports its Redis-compatible one there too, and its own as `valkey_version`). */
export async function serverVersion(redis: Redis): Promise<string | undefined> {
  const info = await redis.info('server');
  return /^valkey_version:(\S+)/m.exec(info)?.[1] ?? /^redis_version:(\S+)/m.exec(info)?.[1];
}
