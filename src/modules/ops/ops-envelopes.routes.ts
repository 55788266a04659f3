import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError } from '../../http/errors.js';
import type { CommitMutation } from '../../http/idempotency.js';
import { ZPagingQuery, resolvePaging, toPage } from '../../http/paging.js';
import { enqueue } from '../../jobs/queue.js';
import type { AuditService } from '../audit/audit.service.js';
import type { EnvelopesRepo } from '../envelopes/envelopes.repo.js';
import { REFUND_JOB, type EnvelopesService } from '../envelopes/envelopes.service.js';

const ZId = z.object({ id: z.uuid() });

/** Operator routes over envelopes and refunds (same auth as the rest of /ops). */
export function opsEnvelopeRoutes(deps: { db: Db; envelopes: EnvelopesService; repo: EnvelopesRepo; audit: AuditService; commitMutation: CommitMutation }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { auth: 'operator' as const };

    r.post('/ops/envelopes/:id/cancel', { config, schema: { hide: true, params: ZId } }, (request, reply) =>
      deps.commitMutation(request, reply, async (tx) => {
        const envelope = await deps.repo.findById(tx, request.params.id, true);
        if (!envelope) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
        await deps.envelopes.cancel(tx, null, envelope);
        await deps.audit.operator(tx, request.operator!, { customerId: envelope.customerId, action: 'envelope.cancel', resourceType: 'envelope', resourceId: envelope.id });
        const after = (await deps.repo.findById(tx, envelope.id))!;
        return { status: 200, body: { envelopeId: after.id, status: after.status } };
      }),
    );

    r.get('/ops/refunds', { config, schema: { hide: true, querystring: ZPagingQuery.extend({ status: z.enum(['pending', 'succeeded', 'failed']).optional() }) } }, async (request) => {
      const paging = resolvePaging(request.query);
      const { rows, total } = await deps.repo.listRefunds(deps.db, request.query.status, paging);
      const data = rows.map((x) => ({ ...x, amountMicros: Number(x.amountMicros), createdAt: x.createdAt.toISOString(), updatedAt: x.updatedAt.toISOString() }));
      return toPage(paging, data, total);
    });

    r.post('/ops/refunds/:id/retry', { config, schema: { hide: true, params: ZId } }, (request, reply) =>
      deps.commitMutation(request, reply, async (tx) => {
        const refund = await deps.repo.refund(tx, request.params.id, true);
        if (!refund) throw new AppError('NOT_FOUND', 'No such refund');
        if (refund.status !== 'succeeded') {
          await deps.repo.updateRefund(tx, refund.id, { status: 'pending' });
          await enqueue(tx, { type: REFUND_JOB, payload: { refundId: refund.id }, maxAttempts: 5 });
        }
        await deps.audit.operator(tx, request.operator!, { customerId: refund.customerId, action: 'refund.retry', resourceType: 'refund', resourceId: refund.id });
        return { status: 200, body: { refundId: refund.id, status: refund.status === 'succeeded' ? 'succeeded' : 'pending' } };
      }),
    );
  };
}
