import type { FastifyContextConfig, FastifyInstance, FastifyRequest } from 'fastify';
import { safeEqual } from '../lib/crypto.js';
import type { Actor, OperatorContext, RequestContext } from '../context.js';
import { AppError } from '../errors.js';
import type { AuthFailureCounter } from './auth-failures.js';
import { ipBucket } from './client-address.js';
import { routeConfigOf } from './route-config.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `customer`: a customer credential is required; `operator`: OPS_TOKEN or X-S2S-Key; `optional`: a
     * bearer credential is checked when sent (a bad one is 401), none is an anonymous call (free public
     * routes: their rate limit is then per IP); default: none.
     */
    auth?: 'customer' | 'operator' | 'optional' | 'none';
    /** The code for a customer route called with no credential at all; SPEC names MISSING_AUTH for /v1/account/products. */
    noCredentialCode?: 'UNAUTHORIZED' | 'MISSING_AUTH';
    /**
     * `handler`: who may call and what a call costs depend on the body (POST /mcp: the tool a JSON-RPC
     * tools/call names), which onRequest has not read. A request that no resolver accepts (no bearer, no
     * payment) goes on without an actor, for the handler to refuse (401), ask to pay (402) or serve; an
     * x402 payment is resolved to its payer here and priced by the handler.
     */
    pricedBy?: 'handler';
  }
  interface FastifyRequest {
    actor?: Actor;
    operator?: OperatorContext;
  }
}

/**
 * One customer auth mode. Returns undefined when the credential is not of its kind, so the next mode
 * may try; throws an AppError when it is of its kind but invalid. Wallet JWT, x402 and the dashboard
 * cookie plug in here and resolve to the same customer record.
 */
export type ActorResolver = (request: FastifyRequest, bearer: string | undefined) => Promise<Actor | undefined>;

/**
 * x402's mode: `deferred` when the credential is a payment, whose payer becomes the actor only once the
 * call's price is known and the payment verified (after the body is read, before the handler); until
 * then the request has no actor (its rate limit is its IP's).
 */
export type PaymentResolver = (request: FastifyRequest, bearer: string | undefined) => Promise<Actor | 'deferred' | undefined>;

function bearerOf(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (header === undefined) return undefined;
  const m = /^Bearer\s+(\S+)\s*$/i.exec(header);
  if (!m) throw new AppError('TOKEN_INVALID', 'The Authorization header must be "Bearer <credential>"');
  return m[1];
}

export function registerAuth(
  app: FastifyInstance,
  opts: { resolvers: (ActorResolver | PaymentResolver)[]; opsToken: string; s2sKey: string | undefined; failures: AuthFailureCounter },
): void {
  // Registered before the rate limiter, which needs the actor to budget per customer: this hook limits
  // failed authentication per IP itself, before the credential is looked at.
  app.addHook('onRequest', async (request) => {
    const config = routeConfigOf(request);
    const kind = config.auth;
    if (kind === 'optional' && request.headers.authorization === undefined) return;
    if (kind !== 'customer' && kind !== 'operator' && kind !== 'optional') return;
    const network = ipBucket(request.ip);
    const blockedMs = await opts.failures.blockedFor(network);
    if (blockedMs !== undefined) {
      const seconds = Math.max(1, Math.ceil(blockedMs / 1000));
      throw new AppError('RATE_LIMITED', `Too many failed authentications from this address; retry in ${seconds} seconds`, { retryAfterSeconds: seconds }, { 'Retry-After': String(seconds) });
    }
    try {
      if (kind === 'operator') request.operator = authenticateOperator(request);
      else request.actor = await authenticateCustomer(request, config);
    } catch (err) {
      if (isRefusedCredential(request, err)) await opts.failures.record(network);
      throw err;
    }
  });

  async function authenticateCustomer(request: FastifyRequest, config: FastifyContextConfig): Promise<Actor | undefined> {
    if (request.headers['x-s2s-key'] !== undefined) {
      throw new AppError('UNAUTHORIZED', 'X-S2S-Key is accepted on the operator API only');
    }
    const bearer = bearerOf(request);
    for (const resolve of opts.resolvers) {
      const actor = await resolve(request, bearer);
      if (actor === 'deferred') return undefined;
      if (actor) return actor;
    }
    if (bearer === undefined) {
      if (config.pricedBy === 'handler') return undefined;
      throw new AppError(config.noCredentialCode ?? 'UNAUTHORIZED', 'Authentication required: send Authorization: Bearer <API key or wallet JWT>');
    }
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

/**
 * A credential was presented in a recognised form and refused: what a guesser produces, and what costs
 * a lookup. A missing credential, or one whose form is wrong (TOKEN_INVALID), is refused for free and
 * cannot succeed, so it does not count.
 */
function isRefusedCredential(request: FastifyRequest, err: unknown): boolean {
  if (!(err instanceof AppError) || err.status !== 401 || err.code === 'TOKEN_INVALID') return false;
  return request.headers.authorization !== undefined || request.headers['x-s2s-key'] !== undefined;
}

/** The service-facing view of a customer request. */
export function requestContext(request: FastifyRequest): RequestContext {
  if (!request.actor) throw new Error('requestContext on a route without customer auth');
  return { actor: request.actor, requestId: request.id, ip: request.ip, testModeHeader: testModeRequested(request) };
}

/** X-Service-Test-Mode: true (in any case) asks for a free test send. */
export function testModeRequested(request: FastifyRequest): boolean {
  const testMode = request.headers['x-service-test-mode'];
  return typeof testMode === 'string' && testMode.toLowerCase() === 'true';
}
