import { and, count, desc, eq, gt, isNotNull, isNull, ne, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { preparedPer } from '../../db/prepared.js';
import { webhookDeliveries, webhooks } from '../../db/schema/index.js';
import type { Owner } from '../envelopes/envelopes.repo.js';

export type WebhookRow = typeof webhooks.$inferSelect;
export type DeliveryRow = typeof webhookDeliveries.$inferSelect;

const owned = (id: string, o: Owner) => and(eq(webhooks.id, id), eq(webhooks.customerId, o.customerId), eq(webhooks.mode, o.mode), isNull(webhooks.deletedAt));

export function createWebhooksRepo() {
  // Every event a state change records looks up its owner's registrations (most have none), in the
  // state change's transaction: built and planned once (db/prepared.ts), not on every event.
  const activeStmt = preparedPer((db) =>
    db
      .select()
      .from(webhooks)
      .where(and(eq(webhooks.customerId, sql.placeholder('customerId')), eq(webhooks.mode, sql.placeholder('mode')), eq(webhooks.active, true), isNull(webhooks.deletedAt)))
      .prepare('webhooks_active'),
  );

  return {
    async insert(tx: DbOrTx, row: typeof webhooks.$inferInsert): Promise<WebhookRow> {
      const [r] = await tx.insert(webhooks).values(row).returning();
      return r;
    },

    async find(tx: DbOrTx, id: string, owner: Owner, lock = false): Promise<WebhookRow | undefined> {
      const q = tx.select().from(webhooks).where(owned(id, owner));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    async findById(tx: DbOrTx, id: string, lock = false): Promise<WebhookRow | undefined> {
      const q = tx.select().from(webhooks).where(eq(webhooks.id, id));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    async list(tx: DbOrTx, owner: Owner, page: { limit: number; offset: number }) {
      const where = and(eq(webhooks.customerId, owner.customerId), eq(webhooks.mode, owner.mode), isNull(webhooks.deletedAt));
      const [rows, [{ total }]] = await Promise.all([
        tx.select().from(webhooks).where(where).orderBy(desc(webhooks.createdAt)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(webhooks).where(where),
      ]);
      return { rows, total };
    },

    /** Active registrations of an owner; the caller filters by event. */
    async active(tx: DbOrTx, owner: Owner): Promise<WebhookRow[]> {
      return activeStmt(tx).execute({ customerId: owner.customerId, mode: owner.mode });
    },

    async update(tx: DbOrTx, id: string, set: Partial<typeof webhooks.$inferInsert>): Promise<WebhookRow> {
      const [row] = await tx.update(webhooks).set({ ...set, updatedAt: sql`now()` }).where(eq(webhooks.id, id)).returning();
      return row;
    },

    async insertDeliveries(tx: DbOrTx, rows: (typeof webhookDeliveries.$inferInsert)[]): Promise<DeliveryRow[]> {
      if (rows.length === 0) return [];
      return tx.insert(webhookDeliveries).values(rows).returning();
    },

    async delivery(tx: DbOrTx, id: string, lock = false): Promise<DeliveryRow | undefined> {
      const q = tx.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id));
      const [row] = lock ? await q.for('update') : await q;
      return row;
    },

    /** The delivery with its registration, in one round trip (the hot path of every attempt). */
    async deliveryWithWebhook(tx: DbOrTx, id: string): Promise<{ d: DeliveryRow; w: WebhookRow } | undefined> {
      const [row] = await tx.select({ d: webhookDeliveries, w: webhooks }).from(webhookDeliveries).innerJoin(webhooks, eq(webhooks.id, webhookDeliveries.webhookId)).where(eq(webhookDeliveries.id, id));
      return row;
    },

    /** A success resets the failure count without locking the registration when there is nothing to reset. */
    async resetFailures(tx: DbOrTx, webhookId: string): Promise<void> {
      await tx.update(webhooks).set({ consecutiveFailures: 0, updatedAt: sql`now()` }).where(and(eq(webhooks.id, webhookId), ne(webhooks.consecutiveFailures, 0)));
    },

    async updateDelivery(tx: DbOrTx, id: string, set: Partial<typeof webhookDeliveries.$inferInsert>): Promise<void> {
      await tx.update(webhookDeliveries).set({ ...set, updatedAt: sql`now()` }).where(eq(webhookDeliveries.id, id));
    },

    /** Pending deliveries of a deleted registration stop: they end FAILED and are never sent. */
    async failPending(tx: DbOrTx, webhookId: string, reason: string): Promise<void> {
      await tx
        .update(webhookDeliveries)
        .set({ status: 'FAILED', errorMessage: reason, nextRetryAt: null, updatedAt: sql`now()` })
        .where(and(eq(webhookDeliveries.webhookId, webhookId), eq(webhookDeliveries.status, 'PENDING')));
    },

    /** A delivery of one registration (the registration was scoped to its owner already). */
    async deliveryOf(tx: DbOrTx, webhookId: string, id: string): Promise<DeliveryRow | undefined> {
      const [row] = await tx.select().from(webhookDeliveries).where(and(eq(webhookDeliveries.id, id), eq(webhookDeliveries.webhookId, webhookId)));
      return row;
    },

    /** Test events and redeliveries asked for since a time: the deliveries a person makes by hand. */
    async countManualSince(tx: DbOrTx, webhookId: string, since: Date, testEvent: string): Promise<number> {
      const [{ n }] = await tx
        .select({ n: count() })
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.webhookId, webhookId), gt(webhookDeliveries.createdAt, since), or(eq(webhookDeliveries.event, testEvent), isNotNull(webhookDeliveries.redeliveryOf))));
      return n;
    },

    async deliveries(tx: DbOrTx, webhookId: string, status: string | undefined, page: { limit: number; offset: number }) {
      const where = and(eq(webhookDeliveries.webhookId, webhookId), status ? eq(webhookDeliveries.status, status as DeliveryRow['status']) : undefined);
      const [rows, [{ total }]] = await Promise.all([
        tx.select().from(webhookDeliveries).where(where).orderBy(desc(webhookDeliveries.createdAt), sql`${webhookDeliveries.eventId} DESC NULLS LAST`, desc(webhookDeliveries.id)).limit(page.limit).offset(page.offset),
        tx.select({ total: count() }).from(webhookDeliveries).where(where),
      ]);
      return { rows, total };
    },
  };
}

export type WebhooksRepo = ReturnType<typeof createWebhooksRepo>;
