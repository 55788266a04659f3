import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountRepo } from '../modules/account/account.repo.js';
import type { Db } from '../db/client.js';
import { safeEqual, sha256Hex } from '../lib/crypto.js';
import type { ApiKeyCache } from './api-key-cache.js';
import type { Actor, OperatorContext, RequestContext } from './context.js';
import { AppError } from './errors.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `customer`: a customer credential is required; `operator`: OPS_TOKEN or X-S2S-Key; default: none. */
    auth?: 'customer' | 'operator' | 'none';
  }
  interface FastifyRequest {
    actor?: Actor;
    operator?: OperatorContext;
  }
}

export const API_KEY_PATTERN = /^svc_(live|test)_[0-9a-f]{32}$/;

/**
 * One customer auth mode. Returns undefined when the credential is not of its kind, so the next mode
 * may try; throws an AppError when it is of its kind but invalid. Wallet JWT, x402 and the dashboard
 * cookie plug in here and resolve to the same customer record.
 */
export type ActorResolver = (request: FastifyRequest, bearer: string | undefined) => Promise<Actor | undefined>;

export function apiKeyResolver(deps: { db: Db; accounts: AccountRepo; cache: ApiKeyCache }): ActorResolver {
  return async (_request, bearer) => {
    if (!bearer?.startsWith('svc_')) return undefined;
    if (!API_KEY_PATTERN.test(bearer)) throw new AppError('TOKEN_INVALID', 'The API key is malformed');
    const keyHash = sha256Hex(bearer);
    const cached = deps.cache.get(keyHash);
    if (cached) return cached;
    const key = await deps.accounts.findActiveKeyByHash(deps.db, keyHash);
    if (!key) throw new AppError('UNAUTHORIZED', 'The API key is unknown or revoked');
    const actor: Actor = { customerId: key.customerId, mode: key.mode, via: 'api_key', keyId: key.id, keyPrefix: key.prefix };
    deps.cache.set(keyHash, actor);
    return actor;
  };
}

function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw new AppError('TOKEN_INVALID', 'The Authorization header must be "Bearer <credential>"');
  return m[1];
}

export function registerAuth(app: FastifyInstance, opts: { resolvers: ActorResolver[]; opsToken: string; s2sKey: string | undefined }): void {
  app.addHook('onRequest', async (request) => {
    const kind = request.routeOptions.config.auth;
    if (kind === 'customer') request.actor = await authenticateCustomer(request);
    else if (kind === 'operator') request.operator = authenticateOperator(request);
  });

  async function authenticateCustomer(request: FastifyRequest): Promise<Actor> {
    if (request.headers['x-s2s-key'] !== undefined) {
      throw new AppError('UNAUTHORIZED', 'X-S2S-Key is accepted on the operator API only');
    }
    const bearer = bearerOf(request);
    for (const resolve of opts.resolvers) {
      const actor = await resolve(request, bearer);
      if (actor) return actor;
    }
    if (bearer === undefined) throw new AppError('UNAUTHORIZED', 'Authentication required: send Authorization: Bearer <API key>');
    throw new AppError('TOKEN_INVALID', 'The bearer credential is not a recognised API key or token');
  }

  function authenticateOperator(request: FastifyRequest): OperatorContext {
    const base = { requestId: request.id, ip: request.ip };
    const s2s = request.headers['x-s2s-key'];
    if (typeof s2s === 'string') {
      if (opts.s2sKey && safeEqual(s2s, opts.s2sKey)) return { actorType: 's2s', ...base };
      throw new AppError('UNAUTHORIZED', 'The X-S2S-Key is not accepted');
    }
    const bearer = bearerOf(request);
    if (bearer === undefined) throw new AppError('UNAUTHORIZED', 'Operator authentication required');
    if (!safeEqual(bearer, opts.opsToken)) throw new AppError('UNAUTHORIZED', 'The operator token is not valid');
    return { actorType: 'operator', ...base };
  }
}

/** The service-facing view of a customer request. */
export function requestContext(request: FastifyRequest): RequestContext {
  if (!request.actor) throw new Error('requestContext on a route without customer auth');
  const testMode = request.headers['x-service-test-mode'];
  return {
    actor: request.actor,
    requestId: request.id,
    ip: request.ip,
    testModeHeader: typeof testMode === 'string' && testMode.toLowerCase() === 'true',
  };
}
