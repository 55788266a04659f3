import type { Redis } from 'ioredis';

type Logger = { info(obj: object, msg?: string): void; warn(obj: object, msg?: string): void };

/** What /metrics learns of the shared counters (modules/ops/metrics.ts). */
export type RedisObserver = {
  /** Read at scrape time: whether this node counts in Redis now. */
  watchRedis(isShared: () => boolean): void;
  /** A command Redis did not answer in time, or failed: that count was made in the process instead. */
  redisUnanswered(): void;
};

/** A connection attempt that takes longer than this fails: a start, or a request, never waits on a dead host. */
const CONNECT_TIMEOUT_MS = 1_000;
/**
 * A command unanswered this long fails. Redis answers a counter in well under a millisecond on a
 * network; the rest is room for a busy node's own event loop (a late timer fails a command whose
 * answer already arrived). A request waits this long at most per command, and only until
 * UNANSWERED_IN_A_ROW commands in a row have failed.
 */
const COMMAND_TIMEOUT_MS = 250;
/** Commands failing in a row before the node stops sending them and counts alone. */
const UNANSWERED_IN_A_ROW = 3;
/** While the node counts alone on a connected Redis: how often a PING asks whether it answers again. */
const PROBE_EVERY_MS = 1_000;
/** Reconnection backoff: 100 ms more per attempt, capped. */
const RECONNECT_MAX_MS = 5_000;

/**
 * The Redis that shares counters between nodes, and whether to use it. Callers treat Redis as
 * optional at run time: `run` sends their command while Redis answers and uses their own count when
 * it does not. Two ways Redis stops answering:
 * - unreachable (refused, cut, not yet connected): every command fails at once (no offline queue, no
 *   retry of a command caught by a disconnect) and the connection keeps reconnecting in the background;
 * - connected but hung (a paused or overloaded server, a partition that drops packets): ioredis still
 *   says `ready`, and every command would wait out COMMAND_TIMEOUT_MS, twice per request (the
 *   failed-authentication check and the rate limit). After UNANSWERED_IN_A_ROW failures in a row no
 *   command is sent until a PING is answered in time again.
 */
export type SharedRedis = {
  readonly client: Redis;
  /** True while counters go through Redis. */
  shared(): boolean;
  /** `shared()` (a command to `client`) while Redis answers; `local()` while it does not, or when that command fails. */
  run<T>(shared: () => Promise<T>, local: () => Promise<T>): Promise<T>;
};

/** Connects (a Redis that is down at start does not stop the start) and returns the counters' gate. */
export async function openRedis(opts: { url: string; keyPrefix: string; log: Logger; observer?: RedisObserver }): Promise<SharedRedis> {
  // Loaded here, with REDIS_URL only: a node without it does not hold ioredis (issue 38, memory).
  const { Redis } = await import('ioredis');
  const client = new Redis(opts.url, {
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
  client.on('error', (err: Error) => {
    if (down) return;
    down = true;
    opts.log.warn({ err: err.message }, 'Redis unreachable: rate-limit and auth-failure counters are per process until it answers');
  });

  let unanswered = 0;
  let hung = false;
  let nextProbe = 0;
  const answered = () => {
    unanswered = 0;
    if (!hung) return;
    hung = false;
    opts.log.info({}, 'Redis answers again: counters are shared');
  };
  client.on('ready', () => {
    // A new connection answered its ready check: whatever hung before answers now.
    answered();
    if (!down) return;
    down = false;
    opts.log.info({}, 'Redis reachable again: counters are shared');
  });
  const probe = () => {
    if (Date.now() < nextProbe) return;
    nextProbe = Date.now() + PROBE_EVERY_MS;
    client.ping().then(answered, () => {});
  };
  const shared = () => client.status === 'ready' && !hung;
  opts.observer?.watchRedis(shared);

  await client.connect().catch(() => {
    // Logged by the error handler; ioredis keeps trying.
  });
  return {
    client,
    shared,
    async run(command, local) {
      if (hung && client.status === 'ready') probe();
      // Not connected: fail over at once rather than wait for a command that cannot be sent.
      if (!shared()) return local();
      try {
        const result = await command();
        answered();
        return result;
      } catch (err) {
        opts.observer?.redisUnanswered();
        if (++unanswered >= UNANSWERED_IN_A_ROW && !hung && client.status === 'ready') {
          hung = true;
          nextProbe = Date.now() + PROBE_EVERY_MS;
          opts.log.warn(
            { err: (err as Error).message, failedInARow: unanswered, timeoutMs: COMMAND_TIMEOUT_MS },
            'Redis is connected but does not answer: rate-limit and auth-failure counters are per process until it answers a PING',
          );
        }
        return local();
      }
    },
  };
}

/** Closes the connection: politely when it is up, at once when it is not (QUIT would wait for nothing). */
export async function closeRedis(redis: SharedRedis): Promise<void> {
  if (redis.shared()) {
    await redis.client.quit().catch(() => redis.client.disconnect());
    return;
  }
  redis.client.disconnect();
}

export type { Redis };
