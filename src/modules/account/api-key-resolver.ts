import type { Actor } from '../../context.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { ActorResolver } from '../../http/auth.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { AccountRepo } from './account.repo.js';
import type { ApiKeyCache } from './api-key-cache.js';

const API_KEY_PATTERN = /^svc_(live|test)_[0-9a-f]{32}$/;

/** Resolves `Bearer svc_live_…` / `svc_test_…` to its customer; the per-node cache saves the query on the hot path. */
export function apiKeyResolver(deps: { db: Db; accounts: AccountRepo; cache: ApiKeyCache }): ActorResolver {
  return async (_request, bearer) => {
    if (!bearer?.startsWith('svc_')) return undefined;
    if (!API_KEY_PATTERN.test(bearer)) throw new AppError('TOKEN_INVALID', 'The API key is malformed');
    const keyHash = sha256Hex(bearer);
    const cached = deps.cache.get(keyHash);
    if (cached) return cached;
    const readEpoch = deps.cache.epoch();
    const key = await deps.accounts.findActiveKeyByHash(deps.db, keyHash);
    if (!key) throw new AppError('UNAUTHORIZED', 'The API key is unknown or revoked');
    const actor: Actor = { customerId: key.customerId, mode: key.mode, via: 'api_key', keyId: key.id, keyPrefix: key.prefix };
    // Dropped if the key was evicted (revoked) while we read it: the row we read may be stale.
    deps.cache.set(keyHash, actor, readEpoch);
    return actor;
  };
}

