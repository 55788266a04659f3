import { Redis } from 'ioredis';

type Logger = { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };

/** A connection attempt that takes longer than this fails: a start, or a request, never waits on a dead host. */
const CONNECT_TIMEOUT_MS = 1_000;
/** A command unanswered this long fails, so a Redis that hangs costs a request this much at most. */
const COMMAND_TIMEOUT_MS = 500;
/** Reconnection backoff: 100 ms more per attempt, capped. */
const RECONNECT_MAX_MS = 5_000;

/**
 * The Redis connection that shares counters between nodes. Callers treat Redis as optional at run
 * time: while it is not `ready` every command fails at once (no offline queue, no retry of a command
 * caught by a disconnect) and they count in the process instead; the connection keeps reconnecting in
 * the background. A Redis that is down at start does not stop the start.
 */
export async function openRedis(opts: { url: string; keyPrefix: string; log: Logger }): Promise<Redis> {
  const redis = new Redis(opts.url, {
    keyPrefix: opts.keyPrefix,
    lazyConnect: true,
    connectTimeout: CONNECT_TIMEOUT_MS,
    commandTimeout: COMMAND_TIMEOUT_MS,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 100, RECONNECT_MAX_MS),
  });
  // One line per change of state, not one per failed reconnection attempt.
  let down = false;
  redis.on('error', (err: Error) => {
    if (down) return;
    down = true;
    opts.log.warn({ err: err.message }, 'Redis unreachable: rate-limit and auth-failure counters are per process until it answers');
  });
  redis.on('ready', () => {
    if (!down) return;
    down = false;
    opts.log.info({}, 'Redis reachable again: counters are shared');
  });
  await redis.connect().catch(() => {
    // Logged by the error handler; ioredis keeps trying.
  });
  return redis;
}

/** Closes the connection: politely when it is up, at once when it is not (QUIT would wait for nothing). */
export async function closeRedis(redis: Redis): Promise<void> {
  if (redis.status === 'ready') {
    await redis.quit().catch(() => redis.disconnect());
    return;
  }
  redis.disconnect();
}

export type { Redis };
