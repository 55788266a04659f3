import type { Actor } from './context.js';

/**
 * Resolved API keys, by key hash, held for a short time so the hot path costs no query. A revocation
 * commits a NOTIFY that evicts the key on every node at once; the TTL bounds staleness should a
 * notification be missed (a listener reconnecting). Unknown keys are never cached.
 */
export function createApiKeyCache(opts: { ttlMs: number; maxEntries?: number; now?: () => number }) {
  const now = opts.now ?? Date.now;
  const max = opts.maxEntries ?? 10_000;
  const entries = new Map<string, { actor: Actor; expiresAt: number }>();
  return {
    get(keyHash: string): Actor | undefined {
      const hit = entries.get(keyHash);
      if (!hit) return undefined;
      if (hit.expiresAt <= now()) {
        entries.delete(keyHash);
        return undefined;
      }
      return hit.actor;
    },
    set(keyHash: string, actor: Actor): void {
      if (opts.ttlMs <= 0) return;
      // Maps iterate in insertion order: dropping the first entry drops the oldest.
      if (entries.size >= max) entries.delete(entries.keys().next().value!);
      entries.set(keyHash, { actor, expiresAt: now() + opts.ttlMs });
    },
    evict(keyHash: string): void {
      entries.delete(keyHash);
    },
    clear(): void {
      entries.clear();
    },
  };
}

export type ApiKeyCache = ReturnType<typeof createApiKeyCache>;

export const API_KEYS_CHANNEL = 'signet_api_keys';
