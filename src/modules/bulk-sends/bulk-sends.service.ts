import { randomUUID } from 'node:crypto';
import type { Paging, RequestContext } from '../../context.js';
import type { BulkSendCaller } from '../../db/schema/bulk-sends.js';
import type { Db, DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { enqueue } from '../../jobs/queue.js';
import type { AuditService } from '../audit/audit.service.js';
import type { BillingService } from '../billing/billing.service.js';
import type { Owner } from '../envelopes/envelopes.repo.js';
import { BULK_SEND_COMPLETED } from '../envelopes/events.js';
import type { TemplatesRepo } from '../templates/templates.repo.js';
import { checkRow } from './bulk-rows.js';
import type { BulkRowRow, BulkSendRow, BulkSendsRepo, RowCounts } from './bulk-sends.repo.js';
import type { TBulkSend } from './bulk-sends.schemas.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const BULK_SEND_JOB = 'bulk_send.run';
export const BULK_SEND_EVENT = BULK_SEND_COMPLETED;

const ownerOf = (ctx: RequestContext): Owner => ({ customerId: ctx.actor.customerId, mode: ctx.actor.mode });

/** A bulk send checked before its transaction opens: every row's verdict and the affordability. */
export type BulkPlan = { id: string; templateId: string; rows: { index: number; input: Record<string, unknown> | null; refused?: { code: string; message: string } }[]; accepted: number };

/** Tells registrations that name `bulk_send.completed` that a bulk send ended (in the transaction that ended it). */
export type PublishBulkEvent = (tx: Tx, e: { owner: Owner; event: string; bulkSend: Record<string, unknown> }) => Promise<void>;

export type BulkSendsServiceDeps = {
  db: Db;
  repo: BulkSendsRepo;
  templates: Pick<TemplatesRepo, 'find'>;
  billing: Pick<BillingService, 'assertAffordable'>;
  audit: AuditService;
  publish: PublishBulkEvent;
  maxRows: number;
  parallelJobs: number;
  envelopeExpiryDays: number;
  storageExpiryDays: number;
};

export function summaryOf(b: BulkSendRow, c: RowCounts) {
  const total = Object.values(c).reduce((a, n) => a + n, 0);
  return {
    bulkSendId: b.id,
    templateId: b.templateId,
    status: b.status,
    testMode: b.mode === 'test' || b.caller.testModeHeader,
    counts: { total, accepted: total - c.REFUSED, refused: c.REFUSED, pending: c.PENDING + c.CLAIMED, created: c.CREATED, failed: c.FAILED, skipped: c.SKIPPED },
    createdAt: b.createdAt.toISOString(),
    endedAt: b.endedAt?.toISOString() ?? null,
  };
}

const rowDto = (r: BulkRowRow) => ({
  index: r.index,
  // A claim is the worker's business: the caller sees a row as pending until it is created or failed.
  status: r.status === 'CLAIMED' ? ('PENDING' as const) : r.status,
  envelopeId: r.envelopeId,
  error: r.errorCode ? { code: r.errorCode, message: r.errorMessage ?? '' } : null,
});

export function createBulkSendsService(deps: BulkSendsServiceDeps) {
  const { repo } = deps;

  async function requireBulkSend(db: DbOrTx, id: string, owner: Owner, lock = false): Promise<BulkSendRow> {
    const row = UUID.test(id) ? await repo.find(db, id.toLowerCase(), owner, lock) : undefined;
    if (!row) throw new AppError('BULK_SEND_NOT_FOUND', 'No such bulk send');
    return row;
  }

  async function dto(db: DbOrTx, b: BulkSendRow, page: { limit: number; offset: number }): Promise<TBulkSend> {
    const [counts, rows] = await Promise.all([repo.counts(db, [b.id]), repo.rows(db, b.id, page)]);
    return { ...summaryOf(b, counts.get(b.id)!), rows: rows.map(rowDto), rowsLimit: page.limit, rowsOffset: page.offset };
  }

  return {
    /**
     * Checks a bulk send, cheapest refusal first: the template (404 for another customer's), each row
     * against the from-template rules (a bad row is refused and listed, never charged; all refused is
     * 422), then one affordability read for every accepted row as one create-and-send (and each gated
     * slot's verification): 402 before anything is written.
     */
    async plan(ctx: RequestContext, templateId: string, rows: unknown[]): Promise<BulkPlan> {
      if (!UUID.test(templateId)) throw new AppError('INVALID_TEMPLATE_ID', `The template id must be a UUID; got ${JSON.stringify(templateId.slice(0, 60))}`);
      if (ctx.actor.payment) throw new AppError('X402_NOT_APPLICABLE', 'A bulk send is paid from a prepaid balance (API key or wallet JWT), one create-and-send per row; an x402 payment buys one call');
      if (rows.length > deps.maxRows) throw new AppError('TOO_MANY_ROWS', `A bulk send takes at most ${deps.maxRows} rows; got ${rows.length}`, { maxRows: deps.maxRows });
      const template = await deps.templates.find(deps.db, templateId.toLowerCase(), ownerOf(ctx));
      if (!template) throw new AppError('TEMPLATE_NOT_FOUND', 'No such template');
      const now = Date.now();
      let operations = 0;
      const planned: BulkPlan['rows'] = rows.map((raw, index) => {
        const verdict = checkRow(template, raw, { envelopeExpiryDays: deps.envelopeExpiryDays, storageExpiryDays: deps.storageExpiryDays, now });
        if (!verdict.ok) return { index, input: null, refused: { code: verdict.code, message: verdict.message } };
        operations += 1 + verdict.gated;
        return { index, input: verdict.row as Record<string, unknown> };
      });
      const refused = planned.filter((r) => r.refused);
      if (refused.length === planned.length) {
        throw new AppError('BULK_ROWS_REFUSED', `All ${planned.length} row(s) were refused; nothing was created or charged`, { rows: refused.map((r) => ({ index: r.index, ...r.refused! })) });
      }
      await deps.billing.assertAffordable({ actor: ctx.actor, operation: 'envelope_from_template', testModeHeader: ctx.testModeHeader, also: Array(operations - 1).fill('envelope_from_template') });
      return { id: randomUUID(), templateId: template.id, rows: planned, accepted: planned.length - refused.length };
    },

    /** The bulk send, its rows and its jobs in the request's transaction (202): the envelopes follow in jobs. */
    async create(tx: Tx, ctx: RequestContext, plan: BulkPlan) {
      const { actor } = ctx;
      const caller: BulkSendCaller = {
        via: actor.via === 'x402' ? 'api_key' : actor.via,
        keyId: actor.keyId,
        ...(actor.keyPrefix ? { keyPrefix: actor.keyPrefix } : {}),
        ...(actor.walletAddress ? { walletAddress: actor.walletAddress } : {}),
        testModeHeader: ctx.testModeHeader,
        requestId: ctx.requestId,
        ip: ctx.ip,
      };
      const bulk = await repo.insert(
        tx,
        { id: plan.id, customerId: actor.customerId, mode: actor.mode, templateId: plan.templateId, status: 'QUEUED', caller },
        plan.rows.map((r) => ({ bulkSendId: plan.id, index: r.index, status: r.refused ? 'REFUSED' : 'PENDING', input: r.input, errorCode: r.refused?.code ?? null, errorMessage: r.refused?.message ?? null })),
      );
      const jobs = Math.max(1, Math.min(deps.parallelJobs, Math.ceil(plan.accepted / 50)));
      await enqueue(tx, Array.from({ length: jobs }, (_, n) => ({ type: BULK_SEND_JOB, payload: { bulkSendId: plan.id }, dedupeKey: `bulk-send:${plan.id}:${n}` })));
      await deps.audit.customer(tx, ctx, { action: 'bulk_send.create', resourceType: 'bulk_send', resourceId: plan.id, metadata: { templateId: plan.templateId, rows: plan.rows.length, accepted: plan.accepted } });
      const refusedRows = plan.rows.filter((r) => r.refused).map((r) => ({ index: r.index, ...r.refused! }));
      return { ...(await dto(tx, bulk, { limit: 0, offset: 0 })), refusedRows };
    },

    async get(db: DbOrTx, ctx: RequestContext, id: string, page: { limit: number; offset: number }) {
      return dto(db, await requireBulkSend(db, id, ownerOf(ctx)), page);
    },

    async list(db: DbOrTx, ctx: RequestContext, paging: Paging) {
      const { rows, total } = await repo.list(db, ownerOf(ctx), paging);
      const counts = await repo.counts(db, rows.map((r) => r.id));
      return { rows: rows.map((r) => summaryOf(r, counts.get(r.id)!)), total };
    },

    /**
     * Rows not created yet are skipped (never charged); envelopes already created stay as they are
     * (cancel them one by one). A row being created as this commits either committed first (CREATED)
     * or finds its claim gone and is undone. Cancelling a cancelled bulk send answers it as it is.
     */
    async cancel(tx: Tx, ctx: RequestContext, id: string) {
      const bulk = await requireBulkSend(tx, id, ownerOf(ctx), true);
      if (bulk.status === 'COMPLETED') throw new AppError('BULK_SEND_ENDED', 'This bulk send has completed; cancel its envelopes one by one (DELETE /v1/envelopes/{id})');
      if (bulk.status !== 'CANCELLED') {
        await repo.cancel(tx, bulk.id);
        const after = (await repo.find(tx, bulk.id, ownerOf(ctx)))!;
        const counts = await repo.counts(tx, [bulk.id]);
        await deps.publish(tx, { owner: ownerOf(ctx), event: BULK_SEND_EVENT, bulkSend: summaryOf(after, counts.get(bulk.id)!) });
        await deps.audit.customer(tx, ctx, { action: 'bulk_send.cancel', resourceType: 'bulk_send', resourceId: bulk.id });
      }
      return dto(tx, (await repo.find(tx, bulk.id, ownerOf(ctx)))!, { limit: 100, offset: 0 });
    },
  };
}

export type BulkSendsService = ReturnType<typeof createBulkSendsService>;
