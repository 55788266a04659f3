import { createHmac } from 'node:crypto';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { complete } from '../../jobs/queue.js';
import { RetryLater } from '../../jobs/retry-later.js';
import { defineJob } from '../../jobs/worker.js';
import type { AuditService } from '../audit/audit.service.js';
import type { Metrics } from '../ops/metrics.js';
import type { DeliveryRow, WebhookRow, WebhooksRepo } from './webhooks.repo.js';

export const DELIVER_JOB = 'webhook.deliver';

export type SendResult = { ok: boolean; status: number | null; error: string | null; gone: boolean };
export type Sender = (req: { url: string; body: string; headers: Record<string, string> }) => Promise<SendResult>;

/**
 * The schedule lists the waits before each retry after an immediate first attempt (1m,5m,…); a
 * schedule that starts with 0s lists the waits before every attempt (SPEC's Alt: 0s,1m,5m,30m,2h is
 * five attempts in all).
 */
export const retryDelays = (scheduleMs: readonly number[]) => (scheduleMs[0] === 0 ? scheduleMs.slice(1) : [...scheduleMs]);

/** ±10% so that many deliveries failing together do not retry in lockstep. */
const jitter = (ms: number) => Math.round(ms * (0.9 + Math.random() * 0.2));

/** The request body and headers of one attempt, in the registration's format. */
export function buildRequest(w: Pick<WebhookRow, 'secret' | 'format'>, d: Pick<DeliveryRow, 'id' | 'event' | 'envelopeId' | 'payload'>, now: Date) {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'user-agent': 'Signet-Webhooks/1',
    'x-service-event': d.event,
    'x-service-delivery-id': `dlv_${d.id}`,
  };
  // An opt-in bulk_send.completed names its bulk send instead of an envelope.
  if (d.payload.bulkSend) {
    const at = now.toISOString();
    const body = JSON.stringify(w.format === 'alt' ? { event: d.event, envelopeId: null, timestamp: at, data: { bulkSend: d.payload.bulkSend } } : { event: d.event, deliveredAt: at, bulkSend: d.payload.bulkSend });
    const t = Math.floor(now.getTime() / 1000);
    headers['x-service-signature'] = w.format === 'alt' ? `sha256=${createHmac('sha256', w.secret).update(body).digest('hex')}` : `t=${t},v1=${createHmac('sha256', w.secret).update(`${t}.${body}`).digest('hex')}`;
    return { body, headers };
  }
  if (w.format === 'alt') {
    const env = d.payload.envelope as { title?: unknown; status?: unknown; createdAt?: unknown };
    const r = d.payload.recipient as { name?: unknown; email?: unknown; role?: unknown; signedAt?: unknown } | null;
    const body = JSON.stringify({
      event: d.event,
      envelopeId: d.envelopeId,
      timestamp: now.toISOString(),
      data: {
        envelope: { title: env.title ?? null, status: env.status, createdAt: env.createdAt },
        recipient: r ? { name: r.name, email: r.email, role: r.role, signedAt: r.signedAt ?? null } : null,
        ...d.payload.data,
      },
    });
    headers['x-service-signature'] = `sha256=${createHmac('sha256', w.secret).update(body).digest('hex')}`;
    return { body, headers };
  }
  // An opt-in event's own part (envelope.reminder_sent: `reminder`) rides beside the envelope.
  const body = JSON.stringify({ event: d.event, deliveredAt: now.toISOString(), envelope: d.payload.envelope, ...d.payload.data });
  const t = Math.floor(now.getTime() / 1000);
  headers['x-service-signature'] = `t=${t},v1=${createHmac('sha256', w.secret).update(`${t}.${body}`).digest('hex')}`;
  return { body, headers };
}

/**
 * One attempt of one delivery. The POST happens outside any transaction; its outcome is recorded
 * under the delivery's and then the registration's row locks. A worker that dies mid-attempt leaves the
 * job to be retried after its lease: the receiver may see the same delivery id twice, never none.
 */
export function deliverJob(deps: { db: Db; repo: WebhooksRepo; audit: AuditService; metrics: Pick<Metrics, 'webhookDelivery'>; send: Sender; scheduleMs: readonly number[]; disableAfter: number }) {
  const { db, repo } = deps;
  const delays = retryDelays(deps.scheduleMs);
  return defineJob({
    type: DELIVER_JOB,
    payload: z.object({ deliveryId: z.guid() }),
    async handle({ deliveryId }, ctx) {
      const found = await repo.deliveryWithWebhook(db, deliveryId);
      if (!found || found.d.status !== 'PENDING') return;
      const { d, w } = found;
      if (w.deletedAt || !w.active) {
        await repo.updateDelivery(db, d.id, { status: 'FAILED', errorMessage: w.deletedAt ? 'registration deleted' : 'registration inactive', nextRetryAt: null });
        deps.metrics.webhookDelivery('dead');
        return;
      }
      const now = new Date();
      const { body, headers } = buildRequest(w, d, now);
      const result = await deps.send({ url: w.url, body, headers });

      let retryIn: number | undefined;
      let completed = false;
      let outcome: 'delivered' | 'retrying' | 'dead' | undefined;
      // The outcome and the job's completion commit together; a retry leaves the job to the worker.
      // The delivery, then the registration (only a failure locks it): the order a DELETE takes them
      // in (opposite orders deadlock, and a job whose outcome rolled back would POST the same delivery
      // again). A success locks no registration, so outcomes of one registration do not queue.
      await db.transaction(async (tx) => {
        const current = await repo.delivery(tx, d.id, true);
        if (!current || current.status !== 'PENDING') return;
        const attempts = current.attempts + 1;
        const record = { attempts, lastAttemptAt: now, responseCode: result.status, errorMessage: result.ok ? null : (result.error ?? `HTTP ${result.status}`).slice(0, 500) };
        if (result.ok) {
          await repo.updateDelivery(tx, d.id, { ...record, status: 'SUCCESS', nextRetryAt: null });
          await repo.resetFailures(tx, w.id);
          completed = await complete(tx, ctx.jobId, ctx.workerId);
          outcome = 'delivered';
          return;
        }
        const hook = await repo.findById(tx, w.id, true);
        if (!hook) return;
        const failures = hook.consecutiveFailures + 1;
        const disable = hook.active && (result.gone || failures >= deps.disableAfter);
        const reason = result.gone ? 'the receiver answered 410 Gone' : `${failures} consecutive failed deliveries`;
        await repo.update(tx, hook.id, { consecutiveFailures: failures, ...(disable ? { active: false, disabledReason: reason } : {}) });
        if (disable) {
          await deps.audit.alert(tx, { kind: 'webhook_disabled', message: `Webhook ${hook.id} (${hook.url}) disabled: ${reason}`, customerId: hook.customerId, resourceType: 'webhook', resourceId: hook.id });
        }
        if (disable || attempts > delays.length) {
          await repo.updateDelivery(tx, d.id, { ...record, status: 'FAILED', nextRetryAt: null });
          completed = await complete(tx, ctx.jobId, ctx.workerId);
          outcome = 'dead';
          return;
        }
        retryIn = jitter(delays[attempts - 1]);
        await repo.updateDelivery(tx, d.id, { ...record, nextRetryAt: new Date(now.getTime() + retryIn) });
        outcome = 'retrying';
      });
      // Counted once the outcome committed: a rolled-back outcome is attempted again, and counted then.
      if (outcome) deps.metrics.webhookDelivery(outcome);
      if (retryIn !== undefined) throw new RetryLater(retryIn, `delivery ${d.id} attempt failed: ${result.error ?? result.status}`);
      return completed ? 'completed' : undefined;
    },
  });
}
