import type { Actor } from '../../context.js';

/**
 * Resolved API keys, by key hash, held for a short time so the hot path costs no query. A revocation
 * commits a NOTIFY that evicts the key on every node at once; the TTL bounds staleness should a
 * notification be missed (a listener reconnecting). Unknown keys are never cached.
 *
 * A resolution that read the key before an eviction must not write it back after: the read may predate
 * the revocation whose NOTIFY evicted it. Every eviction bumps the epoch, and `set` takes the epoch its
 * read started in and is dropped when any eviction came since. (Any eviction, not only of that key:
 * revocations are rare, and the cost is one more query for the requests in flight.)
 */
export function createApiKeyCache(opts: { ttlMs: number; maxEntries?: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  const max = opts.maxEntries ?? 10_000;
  const entries = new Map<string, { actor: Actor; expiresAt: number }>();
  let epoch = 0;
  return {
    /** Read before looking a key up; hand it to `set`. */
    epoch(): number {
      return epoch;
    },
    get(keyHash: string): Actor | undefined {
      const hit = entries.get(keyHash);
      if (!hit) return undefined;
      if (hit.expiresAt <= now()) {
        entries.delete(keyHash);
        return undefined;
      }
      return hit.actor;
    },
    set(keyHash: string, actor: Actor, readEpoch: number = epoch): void {
      if (opts.ttlMs <= 0 || readEpoch !== epoch) return;
      // Maps iterate in insertion order: dropping the first entry drops the oldest.
      if (entries.size >= max) entries.delete(entries.keys().next().value!);
      entries.set(keyHash, { actor, expiresAt: now() + opts.ttlMs });
    },
    evict(keyHash: string): void {
      epoch++;
      entries.delete(keyHash);
    },
    /** Everything, e.g. when the eviction listener reconnects and may have missed notifications. */
    clear(): void {
      epoch++;
      entries.clear();
    },
  };
}

export type ApiKeyCache = ReturnType<typeof createApiKeyCache>;

export const API_KEYS_CHANNEL = 'signet_api_keys';
