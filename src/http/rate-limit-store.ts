import { createRequire } from 'node:module';
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Redis } from '../providers/redis/redis.js';

type Store = FastifyRateLimitStore;
type IncrCallback = Parameters<Store['incr']>[1];

// The plugin's own stores (its Redis store is the atomic INCR + PEXPIRE script); it exports neither.
const require = createRequire(import.meta.url);
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key: string) => Store;
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, cache?: number) => Store;

/** Rate-limit keys under REDIS_KEY_PREFIX: `rl:customer:<id>`, `rl:ip:<address>`, a route's own limit under its method and URL. */
const NAMESPACE = 'rl:';

/** Shared counters while Redis answers; this process's own while it does not. */
class FallbackStore implements Store {
  constructor(
    private readonly redis: Redis,
    private readonly shared: Store,
    private readonly local: Store,
  ) {}

  incr(key: string, cb: IncrCallback, timeWindow: number, max: number): void {
    // Not connected: fail over at once rather than wait for a command that cannot be sent.
    if (this.redis.status !== 'ready') return this.local.incr(key, cb, timeWindow, max);
    this.shared.incr(key, (err, result) => (err ? this.local.incr(key, cb, timeWindow, max) : cb(null, result)), timeWindow, max);
  }

  child(routeOptions: Parameters<Store['child']>[0]): Store {
    return new FallbackStore(this.redis, this.shared.child(routeOptions), this.local.child(routeOptions));
  }
}

/**
 * @fastify/rate-limit's store for REDIS_URL: every node counts in Redis, so a customer's budget is one
 * across the cluster. While Redis is unreachable or slow (a command times out), each node falls back
 * to its own counters: neither fail-open (no limit at all while Redis is down) nor fail-closed (every
 * request refused because a counter cannot be read). The limit then holds per node, so across N nodes
 * a client may get up to N times RATE_LIMIT_MAX until Redis answers again.
 */
export function redisRateLimitStore(redis: Redis): FastifyRateLimitStoreCtor {
  return class extends FallbackStore {
    constructor(params: { continueExceeding?: boolean; exponentialBackoff?: boolean }) {
      const ce = params.continueExceeding ?? false;
      const eb = params.exponentialBackoff ?? false;
      super(redis, new RedisStore(ce, eb, redis, NAMESPACE), new LocalStore(ce, eb));
    }
  };
}
