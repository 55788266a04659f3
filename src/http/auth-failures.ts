import type { Redis, SharedRedis } from '../providers/redis/redis.js';

/** What the auth hook asks: shared through Redis when REDIS_URL is set, this process's own otherwise. */
export type AuthFailureCounter = {
  /** Milliseconds until the address may try again; undefined when it may now. */
  blockedFor(ip: string): Promise<number | undefined>;
  record(ip: string): Promise<void>;
};

type Options = { max: number; windowMs: number; maxTracked?: number; now?: () => number };

/**
 * Refused credentials per client IP in a fixed window. Authentication consults it before looking at a
 * credential, so once an address is over the limit even a correct guess is refused until the window
 * ends: guessing operator tokens or API keys, or making us look up key after unknown key, costs the
 * guesser its address.
 *
 * With Redis the window is one across the cluster (a guesser cannot multiply its tries by the number
 * of nodes). While Redis does not answer, each node counts on its own, as without Redis: failing open
 * would lift the limit for as long as Redis is down, failing closed would refuse every authenticated
 * request; per node, a guesser gets at most AUTH_FAILURE_LIMIT tries per node per window.
 */
export function createAuthFailureCounter(opts: Options & { redis?: SharedRedis }): AuthFailureCounter {
  const local = localCounter(opts);
  const { redis } = opts;
  if (!redis || opts.max <= 0) return local;
  defineScripts(redis.client);
  const scripts = redis.client as unknown as AuthFailureScripts;
  const key = (ip: string) => `authfail:${ip}`;
  return {
    blockedFor: (ip) =>
      redis.run(
        async () => {
          const ms = Number(await scripts.signetAuthFailBlocked(key(ip), opts.max));
          return ms > 0 ? ms : undefined;
        },
        () => local.blockedFor(ip),
      ),
    record: (ip) => redis.run(async () => void (await scripts.signetAuthFailRecord(key(ip), opts.windowMs)), () => local.record(ip)),
  };
}

type AuthFailureScripts = {
  signetAuthFailRecord(key: string, windowMs: number): Promise<number>;
  signetAuthFailBlocked(key: string, max: number): Promise<number>;
};

/** One round trip each, atomic: the window starts with the first failure and is not extended by later ones. */
function defineScripts(redis: Redis): void {
  if ('signetAuthFailRecord' in redis) return;
  redis.defineCommand('signetAuthFailRecord', {
    numberOfKeys: 1,
    lua: `local n = redis.call('INCR', KEYS[1])
      if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
      return n`,
  });
  // The milliseconds left in the window when the address is over the limit; 0 when it is not.
  redis.defineCommand('signetAuthFailBlocked', {
    numberOfKeys: 1,
    lua: `local n = tonumber(redis.call('GET', KEYS[1]) or '0')
      if n < tonumber(ARGV[1]) then return 0 end
      return redis.call('PTTL', KEYS[1])`,
  });
}

/** This process's counters; memory stays bounded under a spray of addresses. */
function localCounter(opts: Options): AuthFailureCounter {
  const now = opts.now ?? Date.now;
  const maxTracked = opts.maxTracked ?? 100_000;
  const byIp = new Map<string, { count: number; resetAt: number }>();
  const live = (ip: string) => {
    const entry = byIp.get(ip);
    if (entry && entry.resetAt <= now()) {
      byIp.delete(ip);
      return undefined;
    }
    return entry;
  };
  return {
    async blockedFor(ip) {
      if (opts.max <= 0) return undefined;
      const entry = live(ip);
      return entry && entry.count >= opts.max ? entry.resetAt - now() : undefined;
    },
    async record(ip) {
      if (opts.max <= 0) return;
      const entry = live(ip);
      if (entry) entry.count++;
      else {
        // The oldest window goes first (Map keeps insertion order).
        if (byIp.size >= maxTracked) byIp.delete(byIp.keys().next().value!);
        byIp.set(ip, { count: 1, resetAt: now() + opts.windowMs });
      }
    },
  };
}
