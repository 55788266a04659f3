/**
 * Refused credentials per client IP in a fixed window. Authentication consults it before looking at a
 * credential, so once an address is over the limit even a correct guess is refused until the window
 * ends: guessing operator tokens or API keys, or making us look up key after unknown key, costs the
 * guesser its address. Per process, like the rate-limit counters without Redis.
 */
export function createAuthFailureCounter(opts: { max: number; windowMs: number; maxTracked?: number; now?: () => number }) {
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
    /** Milliseconds until the address may try again; undefined when it may now. */
    blockedFor(ip: string): number | undefined {
      if (opts.max <= 0) return undefined;
      const entry = live(ip);
      return entry && entry.count >= opts.max ? entry.resetAt - now() : undefined;
    },
    record(ip: string): void {
      if (opts.max <= 0) return;
      const entry = live(ip);
      if (entry) entry.count++;
      else {
        // Bounded memory under a spray of addresses: the oldest window goes first (Map keeps insertion order).
        if (byIp.size >= maxTracked) byIp.delete(byIp.keys().next().value!);
        byIp.set(ip, { count: 1, resetAt: now() + opts.windowMs });
      }
    },
  };
}

export type AuthFailureCounter = ReturnType<typeof createAuthFailureCounter>;
