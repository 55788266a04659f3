import type { Db, Tx } from '../../db/client.js';
import { TERMINAL_STATUSES, type EngineStatus, type EnvelopeStatus, type SigningEngine } from '../../engine/engine.js';
import { enqueueStatement } from '../../jobs/queue.js';
import type { EnvelopeSync } from './envelope-sync.js';
import type { EnvelopeRow, EnvelopesRepo } from './envelopes.repo.js';

export const EXPIRE_JOB = 'envelope.expire';
export const PURGE_JOB = 'envelope.purge';
export const CANCEL_JOB = 'envelope.cancel';

const ended = (status: string) => TERMINAL_STATUSES.includes(status as EnvelopeStatus);

/**
 * The expiry and purge sweeps over a remote engine (Documenso), and its cancellations. The periodic sweep holds its rows
 * locked in one transaction, so it calls no remote engine: it queues one job per due envelope, and
 * each job makes its engine call with no transaction open (the engine finds its work done when the
 * job is repeated), then records the outcome in a short transaction under the envelope's lock.
 * A cancellation is recorded first (the request's transaction: CANCELLED, its event, the refund) and
 * carried out at the engine by its job, retried while the engine is down, dead with an operator alert
 * when its attempts are spent (the worker's).
 */
export function createRemoteSweeps(deps: { repo: EnvelopesRepo; engine: SigningEngine; sync: Pick<EnvelopeSync, 'reconcile'> }) {
  const { repo, engine, sync } = deps;

  return {
    /** Queues a job per row (once per envelope: the dedupe key); answers how many were due. */
    async queue(tx: Tx, type: typeof EXPIRE_JOB | typeof PURGE_JOB | typeof CANCEL_JOB, rows: EnvelopeRow[]): Promise<number> {
      if (rows.length) await tx.execute(enqueueStatement(rows.map((r) => ({ type, payload: { envelopeId: r.id }, dedupeKey: `${type}:${r.id}` }))));
      return rows.length;
    },

    /** One envelope past its signing window ends EXPIRED (unless the engine ended it otherwise first). */
    async expireOne(db: Db, envelopeId: string, done: (tx: Tx) => Promise<boolean>): Promise<boolean> {
      const envelope = await repo.findById(db, envelopeId);
      let live: EngineStatus | undefined;
      if (envelope && !ended(envelope.status) && envelope.expiresAt.getTime() <= Date.now()) {
        await engine.expire(db, envelope.engineEnvelopeId);
        live = await engine.status(db, envelope.engineEnvelopeId);
      }
      return db.transaction(async (tx) => {
        const row = await repo.findById(tx, envelopeId, true);
        // Read after the expiry, the engine's status is an end (EXPIRED, or what came first): no later change can precede it.
        if (row && live && !ended(row.status)) await sync.reconcile(tx, row, { live });
        return done(tx);
      });
    },

    /** One envelope Signet recorded CANCELLED is cancelled at the engine; its recipients then read as the engine ended them. */
    async cancelOne(db: Db, envelopeId: string, done: (tx: Tx) => Promise<boolean>): Promise<boolean> {
      const envelope = await repo.findById(db, envelopeId);
      let live: EngineStatus | undefined;
      if (envelope?.status === 'CANCELLED') {
        await engine.cancel(db, envelope.engineEnvelopeId);
        live = await engine.status(db, envelope.engineEnvelopeId);
      }
      return db.transaction(async (tx) => {
        const row = await repo.findById(tx, envelopeId, true);
        if (row && live) await sync.reconcile(tx, row, { live });
        return done(tx);
      });
    },

    /** One ended envelope's documents are deleted at the engine, then marked purged (download answers 410). */
    async purgeOne(db: Db, envelopeId: string, done: (tx: Tx) => Promise<boolean>): Promise<boolean> {
      const envelope = await repo.findById(db, envelopeId);
      const due = envelope && !envelope.purgedAt && ended(envelope.status);
      if (due) await engine.purge(db, envelope.engineEnvelopeId);
      return db.transaction(async (tx) => {
        if (due) await repo.update(tx, envelopeId, { purgedAt: new Date() });
        return done(tx);
      });
    },
  };
}

export type RemoteSweeps = ReturnType<typeof createRemoteSweeps>;
