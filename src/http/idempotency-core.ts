import { randomUUID } from 'node:crypto';
import type { Db, Tx } from '../db/client.js';
import { AppError } from '../errors.js';
import type { IdempotencyRepo, IdempotencyRow, IdempotencyScope, StoredResponse } from './idempotency.repo.js';

export type Reservation = { scope: IdempotencyScope; leaseToken: string };

/** What a reservation attempt found: the key is this call's now, or it holds a finished answer to replay. */
export type ReserveOutcome = { kind: 'proceed'; reservation: Reservation } | { kind: 'replay'; row: IdempotencyRow };

/**
 * A payment that settles before the call's work (x402). Whoever accepted the payment (the x402 gate for
 * REST, the MCP endpoint for a tools/call) had the facilitator verify it before any work, and builds
 * this. No step runs inside a transaction but `commit`: the facilitator is a remote call (DESIGN §4.17).
 */
export interface PaymentGate {
  /**
   * Before the work's transaction, with none open: the settlement written down as pending, settled, its
   * outcome recorded. Throws the refusal (402), or 503 when the outcome is unknown (nothing was done);
   * returns the receipt headers.
   */
  settle(): Promise<Record<string, string>>;
  /** In the work's transaction, last: the settlement counted for this call (its ledger row). */
  commit(tx: Tx): Promise<void>;
  /** The work did not commit after the settle: the money moved for nothing, so it is refunded (and the operator told). */
  afterFailedCommit(cause: unknown): Promise<void>;
}

type Options = { db: Db; repo: IdempotencyRepo; leaseMs: number; ttlMs: number };

/**
 * Stripe-style idempotency in two steps (DESIGN.md §4.4), with no HTTP in it: REST's hook and
 * commitMutation and the MCP tool runner are thin wrappers around these three steps, so one key is one
 * charge and one stored answer whichever door the call came through.
 * 1. `reserve` the key in its own short transaction (409 while another call holds it, 422 for another
 *    request under the same key, or the finished answer to replay);
 * 2. `commit` the work in one transaction that also writes the answer into the reservation (a payment
 *    settled just before it opens, and counted as it commits);
 * 3. when the call fails instead, `settleFailure` stores a 4xx as its answer and releases a 5xx.
 */
export function createIdempotency(opts: Options) {
  const { repo, db } = opts;

  async function reserve(scope: IdempotencyScope, fingerprint: string): Promise<ReserveOutcome> {
    const leaseToken = randomUUID();
    const proceed = { kind: 'proceed' as const, reservation: { scope, leaseToken } };
    // A new key, the usual case, is one statement; only a key already on record needs the locked read.
    if (await repo.tryInsert(db, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs)) return proceed;
    const outcome = await db.transaction(async (tx) => {
      const existing = await repo.lockExisting(tx, scope);
      if (!existing || existing.expired) {
        // Past its TTL but not purged yet: the key is free again.
        if (existing) await repo.renew(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs, true);
        // The row vanished between our insert and our lock (a 5xx released it, or the purge ran) and
        // another request reserved the key again in that gap: it holds the key now, not this one.
        else if (!(await repo.tryInsert(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs))) return { kind: 'in_use' as const };
        return proceed;
      }
      const { row } = existing;
      if (row.fingerprint !== fingerprint) return { kind: 'reused' as const };
      if (row.state === 'done') return { kind: 'replay' as const, row };
      if (!existing.leaseLapsed) return { kind: 'in_use' as const };
      // The request that held it died or overran its lease: this one takes over. The old one, if it
      // is still alive, will fail to write its response and roll back.
      await repo.renew(tx, scope, fingerprint, leaseToken, opts.leaseMs, opts.ttlMs, false);
      return proceed;
    });
    if (outcome.kind === 'reused') throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request');
    if (outcome.kind === 'in_use') throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'A request with this Idempotency-Key is in progress; retry shortly', {}, { 'Retry-After': '1' });
    return outcome;
  }

  /**
   * Runs a state change in one transaction: the side effect, the charge, the audit row and (under a
   * reservation) the stored answer commit together or not at all. A paid call's payment (verified before
   * any work) is settled before the transaction opens (no remote call inside one, DESIGN §4.17): a refused or
   * unknown settle ends the call with nothing done, and a call that fails after its settle is refunded.
   */
  async function commit<T>(
    call: { reservation?: Reservation; payment?: PaymentGate },
    work: (tx: Tx) => Promise<{ value: T; response: StoredResponse }>,
  ): Promise<{ value: T; response: StoredResponse; receipt: Record<string, string> }> {
    const { reservation, payment } = call;
    let receipt = payment ? await payment.settle() : {};
    let done: { value: T; response: StoredResponse };
    try {
      done = await db.transaction(async (tx) => {
        const done = await work(tx);
        if (reservation && !(await repo.finish(tx, reservation.scope, reservation.leaseToken, done.response))) {
          throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'This request overran its Idempotency-Key lease and was taken over by a retry');
        }
        // The receipt is not part of the stored answer: a replay settles nothing.
        if (payment && done.response.status < 400) await payment.commit(tx);
        return done;
      });
    } catch (err) {
      await payment?.afterFailedCommit(err);
      throw err;
    }
    if (payment && done.response.status >= 400) {
      await payment.afterFailedCommit(new Error(`the call answered ${done.response.status}`));
      receipt = {};
    }
    return { ...done, receipt };
  }

  /**
   * A call that failed under a reservation: a 4xx is its answer and is stored for replay; a 5xx is not,
   * and the reservation is dropped so a retry runs again. Nor is a 402 that offers to pay for this same
   * request (PAYMENT-REQUIRED): the paid retry an x402 client makes carries the same key. Never throws
   * (the failure is what the caller answers).
   */
  async function settleFailure(reservation: Reservation, status: number, response: StoredResponse, log: { warn(obj: object, msg: string): void }): Promise<void> {
    try {
      if (status >= 500 || response.headers['payment-required'] !== undefined) await repo.release(db, reservation.scope, reservation.leaseToken);
      else await repo.finish(db, reservation.scope, reservation.leaseToken, response);
    } catch (e) {
      log.warn({ err: (e as Error).message }, 'could not settle idempotency record');
    }
  }

  return { reserve, commit, settleFailure };
}

export type Idempotency = ReturnType<typeof createIdempotency>;
