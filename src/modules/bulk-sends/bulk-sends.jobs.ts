import { z } from 'zod';
import type { RequestContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { enqueue } from '../../jobs/queue.js';
import { defineJob } from '../../jobs/worker.js';
import type { TemplatesService } from '../templates/templates.service.js';
import type { TFromTemplate } from '../templates/templates.schemas.js';
import type { BulkSendRow, BulkSendsRepo, ClaimedRow } from './bulk-sends.repo.js';
import { BULK_SEND_EVENT, BULK_SEND_JOB, summaryOf, type PublishBulkEvent } from './bulk-sends.service.js';

/** Rows one claim takes: small, so parallel jobs share a bulk send evenly and a crash strands few. */
const CLAIM_BATCH = 10;
/** A claimed row not created within this is taken over by another worker (its worker is presumed dead). */
const ROW_LEASE_MS = 60_000;
/** A run hands over to a fresh job after this, well inside the job deadline. */
const RUN_BUDGET_MS = 4 * 60_000;

/** The envelope's transaction found its row no longer claimed by this worker (cancelled, or taken over). */
class ClaimLost extends Error {}

const contextOf = (b: BulkSendRow): RequestContext => ({
  actor: { customerId: b.customerId, mode: b.mode, via: b.caller.via, keyId: b.caller.keyId, ...(b.caller.keyPrefix ? { keyPrefix: b.caller.keyPrefix } : {}), ...(b.caller.walletAddress ? { walletAddress: b.caller.walletAddress } : {}) },
  requestId: b.caller.requestId,
  ip: b.caller.ip,
  testModeHeader: b.caller.testModeHeader,
});

export type BulkRunnerDeps = {
  db: Db;
  repo: BulkSendsRepo;
  templates: Pick<TemplatesService, 'planEnvelope' | 'commitPlanned' | 'createEnvelope'>;
  publish: PublishBulkEvent;
};

/**
 * Creates a bulk send's envelopes, several jobs side by side and on any number of nodes. Each row is
 * created exactly once: a worker claims rows (a conditional update, SKIP LOCKED), plans the envelope
 * outside any transaction, then commits the envelope, its charge and the row's envelopeId in ONE
 * transaction that first re-checks the claim (markCreated): a row cancelled or taken over meanwhile
 * rolls back, and its staged document is discarded. A crash before that commit leaves the row claimed;
 * its lease lapses and any worker takes it again, with nothing charged the first time.
 */
export function createBulkRunner(deps: BulkRunnerDeps) {
  const { db, repo } = deps;

  async function createRow(bulk: BulkSendRow, ctx: RequestContext, row: ClaimedRow, workerId: string): Promise<void> {
    const input = { ...row.input, sendImmediately: true } as TFromTemplate;
    try {
      // `prefill` rides along on the input: the from-template create takes it where it knows prefilled fields.
      const plan = await deps.templates.planEnvelope(db, ctx, bulk.templateId, input);
      await deps.templates.commitPlanned(db, plan, () =>
        db.transaction(async (tx) => {
          if (!(await repo.markCreated(tx, bulk.id, row.index, workerId, plan.envelope.envelopeId))) throw new ClaimLost();
          await deps.templates.createEnvelope(tx, ctx, plan);
        }),
      );
    } catch (err) {
      if (err instanceof ClaimLost) return;
      // A rule refused it now (the balance ran out, the template was deleted): FAILED, nothing charged.
      if (err instanceof AppError) return repo.markFailed(db, bulk.id, row.index, workerId, { code: err.code, message: err.message });
      await repo.release(db, bulk.id, row.index, workerId).catch(() => undefined);
      throw err;
    }
  }

  /** Ends the bulk send once no row is left, with its event, whoever gets there first; else checks again when the last claim could lapse. */
  async function finish(bulkId: string): Promise<void> {
    await db.transaction(async (tx) => {
      const ended = await repo.complete(tx, bulkId);
      if (ended) {
        const counts = await repo.counts(tx, [bulkId]);
        await deps.publish(tx, { owner: { customerId: ended.customerId, mode: ended.mode }, event: BULK_SEND_EVENT, bulkSend: summaryOf(ended, counts.get(bulkId)!) });
        return;
      }
      const current = await repo.findById(tx, bulkId);
      if (!current || current.status === 'COMPLETED' || current.status === 'CANCELLED') return;
      // Rows claimed by another run: it finishes them, or dies and this check takes them over.
      const at = new Date(Date.now() + ROW_LEASE_MS + 1000);
      await enqueue(tx, { type: BULK_SEND_JOB, payload: { bulkSendId: bulkId }, runAt: at, dedupeKey: `bulk-send:${bulkId}:check:${Math.floor(at.getTime() / 10_000)}` });
    });
  }

  async function run(bulkSendId: string, workerId: string): Promise<void> {
    const bulk = await repo.findById(db, bulkSendId);
    if (!bulk || bulk.status === 'COMPLETED' || bulk.status === 'CANCELLED') return;
    await repo.start(db, bulk.id);
    const ctx = contextOf(bulk);
    const until = Date.now() + RUN_BUDGET_MS;
    for (;;) {
      const claimed = await repo.claim(db, bulk.id, workerId, CLAIM_BATCH, ROW_LEASE_MS);
      if (claimed.length === 0) break;
      for (const row of claimed) await createRow(bulk, ctx, row, workerId);
      if (Date.now() > until) {
        await enqueue(db, { type: BULK_SEND_JOB, payload: { bulkSendId }, dedupeKey: `bulk-send:${bulkSendId}:more:${Date.now()}` });
        return;
      }
    }
    await finish(bulk.id);
  }

  return { run, createRow };
}

export const bulkSendJob = (deps: BulkRunnerDeps) => {
  const runner = createBulkRunner(deps);
  return defineJob({
    type: BULK_SEND_JOB,
    payload: z.object({ bulkSendId: z.guid() }),
    // One claimant per job run: a retried run is a new claimant, and the rows its dead run held lapse to it.
    handle: ({ bulkSendId }, ctx) => runner.run(bulkSendId, `${ctx.workerId}:${ctx.jobId}:${ctx.attempt}`),
    timeoutMs: 6 * 60_000,
  });
};
