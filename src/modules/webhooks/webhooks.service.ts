import type { DbOrTx, Tx } from '../../db/client.js';
import type { RequestContext, Paging } from '../../context.js';
import { AppError } from '../../errors.js';
import { enqueue } from '../../jobs/queue.js';
import { randomHex } from '../../lib/crypto.js';
import type { AuditService } from '../audit/audit.service.js';
import type { Owner } from '../envelopes/envelopes.repo.js';
import { DELIVER_JOB } from './webhooks.jobs.js';
import type { DeliveryRow, WebhookRow, WebhooksRepo } from './webhooks.repo.js';
import { V1_EVENTS } from './webhooks.schemas.js';

/**
 * The event a test sends. SPEC.md's seven events all describe an envelope and none is a test, so the
 * test is a synthetic `ping` with an empty envelope, sent only to the endpoint asked for; no
 * registration can subscribe to it.
 */
export const TEST_EVENT = 'ping';
/** Test events and redeliveries per registration per hour: enough to debug a receiver, too few to flood one. */
export const MAX_MANUAL_PER_HOUR = 20;
const HOUR_MS = 3_600_000;
const DELIVERY_ID = /^(?:dlv_)?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

const UUID = /^(?:wh_)?([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

const iso = (d: Date | null) => (d ? d.toISOString() : null);
const ownerOf = (ctx: RequestContext): Owner => ({ customerId: ctx.actor.customerId, mode: ctx.actor.mode });

export type UrlCheck = (raw: string) => Promise<string>;

type CreateInput = { url: string; events: string[]; description?: string | null; secret?: string; format: 'standard' | 'alt' };
type UpdateInput = { url?: string; events?: string[]; description?: string | null; active?: boolean; format?: 'standard' | 'alt' };
declare const checked: unique symbol;
/** Input whose URL passed the policy and DNS (the only way to get one is `checkCreate`/`checkUpdate`). */
export type Checked<T> = T & { readonly [checked]: true };

export type FanOutEvent = {
  owner: Owner;
  envelopeId: string;
  eventId: number | null;
  event: string;
  occurredAt: Date;
  /** The envelope and the event's recipient; asked for only when an endpoint takes the event. */
  payload: () => Promise<{ envelope: Record<string, unknown>; recipient: Record<string, unknown> | null }>;
};

export function webhookDto(w: WebhookRow) {
  return {
    id: w.id,
    webhookId: `wh_${w.id}`,
    url: w.url,
    events: w.events,
    description: w.description,
    format: w.format,
    active: w.active,
    consecutiveFailures: w.consecutiveFailures,
    disabledReason: w.disabledReason,
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
  };
}

export function deliveryDto(d: DeliveryRow) {
  return {
    id: d.id,
    deliveryId: `dlv_${d.id}`,
    webhookId: d.webhookId,
    event: d.event,
    envelopeId: d.envelopeId,
    status: d.status,
    attempts: d.attempts,
    responseCode: d.responseCode,
    errorMessage: d.errorMessage,
    lastAttemptAt: iso(d.lastAttemptAt),
    nextRetryAt: iso(d.nextRetryAt),
    redeliveryOf: d.redeliveryOf,
    createdAt: d.createdAt.toISOString(),
  };
}

/**
 * Registrations and the fan-out of envelope events into deliveries. A delivery row and its job are
 * written in the transaction that records the event, so an event is never lost and never sent
 * without having happened.
 */
export function createWebhooksService(deps: { repo: WebhooksRepo; audit: AuditService; checkUrl: UrlCheck }) {
  const { repo } = deps;

  async function requireWebhook(tx: DbOrTx, id: string, owner: Owner, lock = false): Promise<WebhookRow> {
    const m = UUID.exec(id);
    const row = m ? await repo.find(tx, m[1].toLowerCase(), owner, lock) : undefined;
    if (!row) throw new AppError('WEBHOOK_NOT_FOUND', 'No such webhook');
    return row;
  }

  /** The registration a test or redelivery goes to: the caller's, enabled, and under the hourly cap. */
  async function requireManual(tx: Tx, ctx: RequestContext, id: string): Promise<WebhookRow> {
    const webhook = await requireWebhook(tx, id, ownerOf(ctx), true);
    if (!webhook.active) throw new AppError('WEBHOOK_DISABLED', 'This webhook is disabled: enable it before sending it anything');
    const sent = await repo.countManualSince(tx, webhook.id, new Date(Date.now() - HOUR_MS), TEST_EVENT);
    if (sent >= MAX_MANUAL_PER_HOUR) throw new AppError('WEBHOOK_MANUAL_LIMIT', `At most ${MAX_MANUAL_PER_HOUR} test events and redeliveries per webhook per hour`, { limit: MAX_MANUAL_PER_HOUR });
    return webhook;
  }

  return {
    requireWebhook,

    /**
     * The URL check resolves DNS (up to 5 s), so it runs before the transaction opens: a lookup
     * holding a transaction would stall every query on PGlite and pin a pool connection on PostgreSQL.
     */
    async checkCreate(input: CreateInput): Promise<Checked<CreateInput>> {
      return { ...input, url: await deps.checkUrl(input.url) } as Checked<CreateInput>;
    },

    async checkUpdate(input: UpdateInput): Promise<Checked<UpdateInput>> {
      return (input.url !== undefined ? { ...input, url: await deps.checkUrl(input.url) } : input) as Checked<UpdateInput>;
    },

    async create(tx: Tx, ctx: RequestContext, input: Checked<CreateInput>) {
      const { url } = input;
      const secret = input.secret ?? `whsec_${randomHex(16)}`;
      const row = await repo.insert(tx, { customerId: ctx.actor.customerId, mode: ctx.actor.mode, url, events: input.events, description: input.description ?? null, secret, format: input.format });
      await deps.audit.customer(tx, ctx, { action: 'webhook.create', resourceType: 'webhook', resourceId: row.id, metadata: { url, events: input.events } });
      return { ...webhookDto(row), secret };
    },

    async list(db: DbOrTx, ctx: RequestContext, paging: Paging) {
      const { rows, total } = await repo.list(db, ownerOf(ctx), paging);
      return { rows: rows.map(webhookDto), total };
    },

    async get(db: DbOrTx, ctx: RequestContext, id: string) {
      return webhookDto(await requireWebhook(db, id, ownerOf(ctx)));
    },

    async update(tx: Tx, ctx: RequestContext, id: string, input: Checked<UpdateInput>) {
      const current = await requireWebhook(tx, id, ownerOf(ctx), true);
      const { url } = input;
      // Re-activating starts counting failures afresh.
      const reactivate = input.active === true && !current.active;
      const row = await repo.update(tx, current.id, {
        ...(url !== undefined ? { url } : {}),
        ...(input.events ? { events: input.events } : {}),
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(input.format ? { format: input.format } : {}),
        ...(input.active !== undefined ? { active: input.active } : {}),
        ...(reactivate ? { consecutiveFailures: 0, disabledReason: null } : {}),
      });
      await deps.audit.customer(tx, ctx, { action: 'webhook.update', resourceType: 'webhook', resourceId: row.id, metadata: { fields: Object.keys(input) } });
      return webhookDto(row);
    },

    /** Soft delete: the history stays for operators; pending deliveries stop. */
    async remove(tx: Tx, ctx: RequestContext, id: string): Promise<void> {
      // Its pending deliveries first, then the registration: the lock order of a delivery's outcome.
      const current = await requireWebhook(tx, id, ownerOf(ctx));
      await repo.failPending(tx, current.id, 'registration deleted');
      await repo.update(tx, current.id, { deletedAt: new Date(), active: false });
      await deps.audit.customer(tx, ctx, { action: 'webhook.delete', resourceType: 'webhook', resourceId: current.id });
    },

    async deliveries(db: DbOrTx, ctx: RequestContext, id: string, status: string | undefined, paging: Paging) {
      const webhook = await requireWebhook(db, id, ownerOf(ctx));
      const { rows, total } = await repo.deliveries(db, webhook.id, status, paging);
      return { rows: rows.map(deliveryDto), total };
    },

    /**
     * A `ping` to this one endpoint, delivered by the same job (signed, retried, recorded) as any event.
     * The registration's row lock serialises the hourly count, so parallel requests cannot pass the cap together.
     */
    async sendTest(tx: Tx, ctx: RequestContext, id: string) {
      const webhook = await requireManual(tx, ctx, id);
      const [row] = await repo.insertDeliveries(tx, [{ webhookId: webhook.id, event: TEST_EVENT, envelopeId: null, eventId: null, payload: { envelope: {}, recipient: null, occurredAt: new Date().toISOString() } }]);
      await enqueue(tx, [{ type: DELIVER_JOB, payload: { deliveryId: row.id }, maxAttempts: 1000 }]);
      await deps.audit.customer(tx, ctx, { action: 'webhook.test', resourceType: 'webhook', resourceId: webhook.id, metadata: { deliveryId: row.id } });
      return deliveryDto(row);
    },

    /** The same payload again as a new delivery linked to the first (the first keeps its own outcome). */
    async redeliver(tx: Tx, ctx: RequestContext, id: string, deliveryId: string) {
      const webhook = await requireManual(tx, ctx, id);
      const m = DELIVERY_ID.exec(deliveryId);
      const first = m ? await repo.deliveryOf(tx, webhook.id, m[1].toLowerCase()) : undefined;
      if (!first) throw new AppError('DELIVERY_NOT_FOUND', 'No such delivery of this webhook');
      if (first.status === 'PENDING') throw new AppError('DELIVERY_PENDING', 'This delivery is still being tried; redeliver it once it succeeded or failed');
      const [row] = await repo.insertDeliveries(tx, [{ webhookId: webhook.id, event: first.event, envelopeId: first.envelopeId, eventId: first.eventId, payload: first.payload, redeliveryOf: first.redeliveryOf ?? first.id }]);
      await enqueue(tx, [{ type: DELIVER_JOB, payload: { deliveryId: row.id }, maxAttempts: 1000 }]);
      await deps.audit.customer(tx, ctx, { action: 'webhook.redeliver', resourceType: 'webhook', resourceId: webhook.id, metadata: { deliveryId: row.id, redeliveryOf: first.id } });
      return deliveryDto(row);
    },

    /** Operator: any customer's registration, deleted ones included. */
    async getAsOperator(db: DbOrTx, id: string) {
      const w = await repo.findById(db, id);
      if (!w) throw new AppError('WEBHOOK_NOT_FOUND', 'No such webhook');
      return { ...webhookDto(w), customerId: w.customerId, mode: w.mode, deletedAt: w.deletedAt?.toISOString() ?? null };
    },

    async deliveriesAsOperator(db: DbOrTx, id: string, status: string | undefined, paging: Paging) {
      const w = await repo.findById(db, id);
      if (!w) throw new AppError('WEBHOOK_NOT_FOUND', 'No such webhook');
      const { rows, total } = await repo.deliveries(db, w.id, status, paging);
      return { rows: rows.map(deliveryDto), total };
    },

    /** One delivery per active registration subscribed to the event, created with the event. */
    async fanOut(tx: Tx, e: FanOutEvent): Promise<void> {
      // "*" is SPEC's seven: an opt-in event goes only to registrations that name it.
      const v1 = (V1_EVENTS as string[]).includes(e.event);
      const targets = (await repo.active(tx, e.owner)).filter((w) => (v1 && w.events.includes('*')) || w.events.includes(e.event));
      if (targets.length === 0) return;
      const { envelope, recipient } = await e.payload();
      const rows = await repo.insertDeliveries(
        tx,
        targets.map((w) => ({
          webhookId: w.id,
          event: e.event,
          envelopeId: e.envelopeId,
          eventId: e.eventId,
          payload: { envelope, recipient, occurredAt: e.occurredAt.toISOString() },
        })),
      );
      // One statement for all the deliveries (enqueue's text is the same for any number of jobs).
      await enqueue(tx, rows.map((d) => ({ type: DELIVER_JOB, payload: { deliveryId: d.id }, maxAttempts: 1000 })));
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
