import { createRequire } from 'node:module';
import type { FastifyRateLimitStore, FastifyRateLimitStoreCtor } from '@fastify/rate-limit';
import type { Redis, SharedRedis } from '../providers/redis/redis.js';

type Store = FastifyRateLimitStore;
type IncrCallback = Parameters<Store['incr']>[1];
type Counted = NonNullable<Parameters<IncrCallback>[1]>;

// The plugin's own stores (its Redis store is the atomic INCR + PEXPIRE script); it exports neither.
const require = createRequire(import.meta.url);
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key: string) => Store;
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as new (continueExceeding: boolean, exponentialBackoff: boolean, cache?: number) => Store;

/** Rate-limit keys under REDIS_KEY_PREFIX: `rl:customer:<id>`, `rl:ip:<address>`, a route's own limit under its method and URL. */
const NAMESPACE = 'rl:';

/** Shared counters while Redis answers; this process's own while it does not. */
class FallbackStore implements Store {
  private readonly redis: SharedRedis;
  private readonly shared: Store;
  private readonly local: Store;
  constructor(
    redis: SharedRedis,
    shared: Store,
    local: Store,
  ) {
    this.redis = redis;
    this.shared = shared;
    this.local = local;
  }

  incr(key: string, cb: IncrCallback, timeWindow: number, max: number): void {
    const count = (store: Store) => () =>
      new Promise<Counted>((resolve, reject) => store.incr(key, (err, result) => (err ? reject(err) : resolve(result!)), timeWindow, max));
    this.redis.run(count(this.shared), count(this.local)).then((result) => cb(null, result), (err: Error) => cb(err));
  }

  child(routeOptions: Parameters<Store['child']>[0]): Store {
    return new FallbackStore(this.redis, this.shared.child(routeOptions), this.local.child(routeOptions));
  }
}

/**
 * @fastify/rate-limit's store for REDIS_URL: every node counts in Redis, so a customer's budget is one
 * across the cluster. While Redis is unreachable or does not answer (providers/redis/redis.ts), each
 * node falls back to its own counters: neither fail-open (no limit at all while Redis is down) nor
 * fail-closed (every request refused because a counter cannot be read). The limit then holds per node, so across N nodes
 * a client may get up to N times RATE_LIMIT_MAX until Redis answers again.
 */
export function redisRateLimitStore(redis: SharedRedis): FastifyRateLimitStoreCtor {
  return class extends FallbackStore {
    constructor(params: { continueExceeding?: boolean; exponentialBackoff?: boolean }) {
      const ce = params.continueExceeding ?? false;
      const eb = params.exponentialBackoff ?? false;
      super(redis, new RedisStore(ce, eb, redis.client, NAMESPACE), new LocalStore(ce, eb));
    }
  };
}
