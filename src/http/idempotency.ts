import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Db, Tx } from '../db/client.js';
import { sha256Hex } from '../lib/crypto.js';
import { AppError } from './errors.js';
import type { IdempotencyRepo, IdempotencyScope, StoredResponse } from './idempotency.repo.js';

export type Reservation = { scope: IdempotencyScope; leaseToken: string };

declare module 'fastify' {
  interface FastifyContextConfig {
    /** `required` on billable operations; every other POST/PUT/PATCH/DELETE accepts the header. */
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
    if (!MUTATING.has(request.method) || !request.actor) return;
    const header = request.headers['idempotency-key'];
    const key = Array.isArray(header) ? header[0] : header;
    if (key === undefined) {
      if (mode === 'required') throw new AppError('IDEMPOTENCY_KEY_REQUIRED', 'This operation is billable and requires an Idempotency-Key header');
      return;
    }
    if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY_LENGTH) {
      throw new AppError('IDEMPOTENCY_KEY_INVALID', `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
    }
    const scope: IdempotencyScope = { customerId: request.actor.customerId, mode: request.actor.mode, key };
    const fingerprint = sha256Hex(`${request.method} ${request.url}\n${request.bodyHash ?? ''}`);
    const leaseToken = randomUUID();

    const outcome = await opts.db.transaction(async (tx) => {
      if (await repo.tryInsert(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs)) return { kind: 'proceed' as const };
      const existing = await repo.lockExisting(tx, scope);
      if (!existing || existing.expired) {
        // Past its TTL but not purged yet: the key is free again.
        if (existing) await repo.renew(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs, true);
        else await repo.tryInsert(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs);
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
      case 'proceed':
        request.idempotency = { scope, leaseToken };
    }
  });

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

declare module 'fastify' {
  interface FastifyInstance {
    settleIdempotencyOnError(request: FastifyRequest, err: AppError, body: string): Promise<void>;
  }
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
    let afterCommit: (() => void) | undefined;
    const { status, body, headers } = await deps.db.transaction(async (tx) => {
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
      return stored;
    });
    request.idempotency = undefined;
    afterCommit?.();
    reply.code(status);
    for (const [k, v] of Object.entries(headers)) if (REPLAYED_HEADERS.includes(k) || k.startsWith('x-')) reply.header(k, v);
    reply.send(body);
  };
}

export type CommitMutation = ReturnType<typeof createMutationRunner>;
