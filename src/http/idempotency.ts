import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db, Tx } from '../db/client.js';
import { sha256Hex } from '../lib/crypto.js';
import { AppError } from '../errors.js';
import { testModeRequested } from './auth.js';
import type { PeriodicTask } from '../jobs/worker.js';
import type { IdempotencyRepo, IdempotencyScope, StoredResponse } from './idempotency.repo.js';

export type Reservation = { scope: IdempotencyScope; leaseToken: string };

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * `required` on billable operations; every other customer POST/PUT/PATCH/DELETE accepts the header.
     * Operator routes opt in with it, and must name their customer as the `:id` path parameter.
     */
    idempotency?: 'required' | 'optional';
  }
  interface FastifyRequest {
    idempotency?: Reservation;
    /** SHA-256 of the raw body (JSON or multipart), for the idempotency fingerprint. */
    bodyHash?: string;
  }
}

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const REPLAYED_HEADERS = ['content-type', 'location'];
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

type Options = { db: Db; repo: IdempotencyRepo; leaseMs: number; ttlMs: number };

/**
 * Stripe-style idempotency in two steps (DESIGN.md §4.4): this hook reserves the key in its own short
 * transaction; the handler's transaction (`commitMutation`) does the work and writes the response into
 * the reservation, committing once. Requests that fail validation never reach this hook and are not
 * recorded, as with Stripe: a corrected retry may reuse the key.
 */
export function registerIdempotency(app: FastifyInstance, opts: Options): void {
  const { repo } = opts;

  app.addHook('preHandler', async (request, reply) => {
    const mode = request.routeOptions.config.idempotency;
    if (!MUTATING.has(request.method)) return;
    const owner = ownerOf(request, mode);
    if (!owner) return;
    const header = request.headers['idempotency-key'];
    const key = Array.isArray(header) ? header[0] : header;
    if (key === undefined) {
      if (mode === 'required') throw new AppError('IDEMPOTENCY_KEY_REQUIRED', 'This operation is billable and requires an Idempotency-Key header');
      return;
    }
    if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw new AppError('IDEMPOTENCY_KEY_INVALID', `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
    }
    const scope: IdempotencyScope = { ...owner, key: owner.namespace + key };
    const fingerprint = fingerprintOf(request);
    const leaseToken = randomUUID();

    const outcome = await reserve(scope, fingerprint, leaseToken).catch((err: unknown) => {
      // An operator route naming a customer that does not exist: nothing to reserve under, and the
      // handler answers 404 without changing anything.
      if (owner.namespace && isForeignKeyViolation(err)) return { kind: 'unknown_owner' as const };
      throw err;
    });

    switch (outcome.kind) {
      case 'reused':
        throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request');
      case 'in_use':
        throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is in progress; retry shortly', {}, { 'Retry-After': '1' });
      case 'replay': {
        const { row } = outcome;
        reply.code(row.responseStatus!).headers(row.responseHeaders ?? {}).header('Idempotent-Replayed', 'true');
        return reply.send(row.responseBody ?? '');
      }
      case 'unknown_owner':
        return;
      case 'proceed':
        request.idempotency = { scope, leaseToken };
    }
  });

  function reserve(scope: IdempotencyScope, fingerprint: string, leaseToken: string) {
    return opts.db.transaction(async (tx) => {
      if (await repo.tryInsert(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs)) return { kind: 'proceed' as const };
      const existing = await repo.lockExisting(tx, scope);
      if (!existing || existing.expired) {
        // Past its TTL but not purged yet: the key is free again.
        if (existing) await repo.renew(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs, true);
        // The row vanished between our insert and our lock (a 5xx released it, or the purge ran) and
        // another request reserved the key again in that gap: it holds the key now, not this one.
        else if (!(await repo.tryInsert(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs))) return { kind: 'in_use' as const };
        return { kind: 'proceed' as const };
      }
      const { row } = existing;
      if (row.fingerprint !== fingerprint) return { kind: 'reused' as const };
      if (row.state === 'done') return { kind: 'replay' as const, row };
      if (!existing.leaseLapsed) return { kind: 'in_use' as const };
      // The request that held it died or overran its lease: this one takes over. The old one, if it
      // is still alive, will fail to write its response and roll back.
      await repo.renew(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs, false);
      return { kind: 'proceed' as const };
    });
  }

  // A handler that threw: a 4xx is the request's answer and is stored for replay; a 5xx is not, and
  // the reservation is dropped so a retry runs again.
  app.decorate('settleIdempotencyOnError', async (request: FastifyRequest, err: AppError, body: string) => {
    const r = request.idempotency;
    if (!r) return;
    request.idempotency = undefined;
    try {
      if (err.status >= 500) await repo.release(opts.db, r.scope, r.leaseToken);
      else await repo.finish(opts.db, r.scope, r.leaseToken, { status: err.status, headers: { 'content-type': 'application/json; charset=utf-8', ...lower(err.headers) }, body });
    } catch (e) {
      request.log.warn({ err: (e as Error).message }, 'could not settle idempotency record');
    }
  });
}

/**
 * A payment that must settle before the request's transaction commits (x402, in modules/x402; later
 * the MCP endpoint's tools/call). The auth resolver that accepted the payment attaches it.
 */
export interface PaymentGate {
  /** Before the transaction: the facilitator checks the payment. Throws the refusal (402/401) or 503. */
  verify(): Promise<void>;
  /** Last step inside the transaction: settles, records the settlement; returns the receipt headers. */
  settle(tx: Tx): Promise<Record<string, string>>;
  /**
   * The transaction failed once settle had been called: when the money moved (or may have: a timed-out
   * settle), keep it on record and alert the operator, outside the rolled-back transaction.
   */
  afterFailedCommit(cause: unknown): Promise<void>;
}

declare module 'fastify' {
  interface FastifyRequest {
    payment?: PaymentGate;
  }
  interface FastifyInstance {
    settleIdempotencyOnError(request: FastifyRequest, err: AppError, body: string): Promise<void>;
  }
}

/**
 * Whose keys a request's Idempotency-Key lives among. A customer's own, per mode. An operator route
 * that opted in reserves under the customer it names, in live mode, with its keys namespaced so they
 * cannot meet the customer's own; the fingerprint (which holds the path) keeps a customer who picked
 * an `ops:` key from ever being replayed an operator's answer, or the reverse.
 */
function ownerOf(request: FastifyRequest, mode: 'required' | 'optional' | undefined): { customerId: string; mode: 'live' | 'test'; namespace: string } | undefined {
  if (request.actor) return { customerId: request.actor.customerId, mode: request.actor.mode, namespace: '' };
  if (!request.operator || !mode) return undefined;
  const customerId = (request.params as { id?: unknown }).id;
  if (typeof customerId !== 'string') throw new Error(`operator route ${request.routeOptions.url} opts into idempotency but names no :id`);
  return { customerId, mode: 'live', namespace: 'ops:' };
}

/**
 * Everything that changes a request's outcome: method, path and query, the body, and the
 * X-Service-Test-Mode header (a free test send is not the live send). The header is only added when it
 * asks for test mode, so records written before it counted keep matching their retries.
 */
function fingerprintOf(request: FastifyRequest): string {
  return sha256Hex(`${request.method} ${request.url}\n${request.bodyHash ?? ''}${testModeRequested(request) ? '\ntest-mode' : ''}`);
}

/** PostgreSQL's foreign_key_violation, as node-postgres or PGlite report it (drizzle may wrap it). */
function isForeignKeyViolation(err: unknown): boolean {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (e.code === '23503') return true;
  }
  return false;
}

const lower = (h: Record<string, string>) => Object.fromEntries(Object.entries(h).map(([k, v]) => [k.toLowerCase(), v]));

export type MutationResult = {
  status: number;
  body: unknown;
  headers?: Record<string, string>;
  /** In-process effects that must wait for the commit (e.g. evicting a cache entry). */
  afterCommit?: () => void;
};

/**
 * Runs a state change in one transaction, and when the request holds an idempotency reservation,
 * stores the serialized response in the same transaction: the side effect, the charge, the audit row
 * and the stored response commit together or not at all.
 */
export function createMutationRunner(deps: { db: Db; repo: IdempotencyRepo }) {
  return async function commitMutation(request: FastifyRequest, reply: FastifyReply, work: (tx: Tx) => Promise<MutationResult>): Promise<void> {
    const reservation = request.idempotency;
    const payment = request.payment;
    let afterCommit: (() => void) | undefined;
    // A paid call (x402): the payment is checked once the request itself was (a 4xx costs the payer
    // nothing) and the idempotency key reserved (a replay never gets here), before any work is done.
    if (payment) await payment.verify();
    let receipt: Record<string, string> = {};
    let settleCalled = false;
    const committed = deps.db.transaction(async (tx) => {
      const result = await work(tx);
      afterCommit = result.afterCommit;
      const payload = result.status === 204 ? '' : JSON.stringify(result.body);
      const stored: StoredResponse = {
        status: result.status,
        headers: { ...(result.status === 204 ? {} : { 'content-type': 'application/json; charset=utf-8' }), ...lower(result.headers ?? {}) },
        body: payload,
      };
      if (reservation && !(await deps.repo.finish(tx, reservation.scope, reservation.leaseToken, stored))) {
        throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'This request overran its Idempotency-Key lease and was taken over by a retry');
      }
      // Settled last, once nothing of ours can fail but the commit: a handler failure settles nothing,
      // and a refused or failed settle rolls the work back. Its receipt is not part of the stored answer:
      // a replay settles nothing.
      if (payment && result.status < 400) {
        settleCalled = true;
        receipt = await payment.settle(tx);
      }
      return stored;
    });
    const { status, body, headers } = await committed.catch(async (err: unknown) => {
      if (settleCalled) await payment!.afterFailedCommit(err);
      throw err;
    });
    request.idempotency = undefined;
    afterCommit?.();
    reply.code(status);
    for (const [k, v] of Object.entries(headers)) if (REPLAYED_HEADERS.includes(k) || k.startsWith('x-')) reply.header(k, v);
    reply.headers(receipt);
    reply.send(body);
  };
}

export type CommitMutation = ReturnType<typeof createMutationRunner>;

/** Periodic: records past their TTL are deleted (a lapsed record already stopped answering). */
export const idempotencyPurgeTask = (repo: IdempotencyRepo): PeriodicTask => ({
  name: 'purge-idempotency-keys',
  run: async (tx) => void (await repo.purgeExpired(tx)),
});
