import type { FastifyRequest } from 'fastify';
import type { Actor } from '../../context.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { ActorResolver } from '../../http/auth.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { AccountRepo } from './account.repo.js';
import type { ApiKeyCache } from './api-key-cache.js';

const API_KEY_PATTERN = /^svc_(live|test)_[0-9a-f]{32}$/;

/** last_used_at is a "when was this key last seen" for people, not an access log: a minute is exact enough. */
const LAST_USED_EVERY_MS = 60_000;
/** Keys whose last write this process remembers; past it the oldest is forgotten (it is then written once more). */
const LAST_USED_MAX_KEYS = 10_000;

/** Resolves `Bearer svc_live_…` / `svc_test_…` to its customer; the per-node cache saves the query on the hot path. */
export function apiKeyResolver(deps: { db: Db; accounts: Pick<AccountRepo, 'findActiveKeyByHash' | 'touchKey'>; cache: ApiKeyCache; now?: () => number }): ActorResolver {
  const now = deps.now ?? Date.now;
  // keyId → when this process last wrote the key's last_used_at: a map lookup per call, a write per minute.
  const lastWritten = new Map<string, number>();

  async function noteUse(request: FastifyRequest, keyId: string): Promise<void> {
    const at = now();
    const last = lastWritten.get(keyId);
    if (last !== undefined && at - last < LAST_USED_EVERY_MS) return;
    // Re-inserted so the map stays in order of last write, and the first entry is the one to forget.
    lastWritten.delete(keyId);
    if (lastWritten.size >= LAST_USED_MAX_KEYS) lastWritten.delete(lastWritten.keys().next().value!);
    lastWritten.set(keyId, at);
    try {
      await deps.accounts.touchKey(deps.db, keyId);
    } catch (err) {
      // A failed write costs the display a minute of accuracy, never the caller its request.
      request.log.warn({ err, keyId }, 'could not record the API key use');
    }
  }

  return async (request, bearer) => {
    if (!bearer?.startsWith('svc_')) return undefined;
    if (!API_KEY_PATTERN.test(bearer)) throw new AppError('TOKEN_INVALID', 'The API key is malformed');
    const keyHash = sha256Hex(bearer);
    const cached = deps.cache.get(keyHash);
    if (cached) {
      await noteUse(request, cached.keyId!);
      return cached;
    }
    const readEpoch = deps.cache.epoch();
    const key = await deps.accounts.findActiveKeyByHash(deps.db, keyHash);
    if (!key) throw new AppError('UNAUTHORIZED', 'The API key is unknown or revoked');
    const actor: Actor = { customerId: key.customerId, mode: key.mode, via: 'api_key', keyId: key.id, keyPrefix: key.prefix };
    // Dropped if the key was evicted (revoked) while we read it: the row we read may be stale.
    deps.cache.set(keyHash, actor, readEpoch);
    await noteUse(request, key.id);
    return actor;
  };
}

