import { and, eq, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { envelopeEvents, envelopeFields, envelopeRecipients, type EventDetails } from '../../db/schema/index.js';
import type { EventRow } from './envelopes.repo.js';

/** The stored copy's side of a hand-over: the recipient row, its fields, and the listed event. */
export function createHandoversStore() {
  return {
    /** The new person in the place, as fresh as a new recipient (nothing opened, sent or agreed yet). */
    async replaceRecipient(tx: DbOrTx, id: number, to: { name: string; email: string }): Promise<void> {
      await tx
        .update(envelopeRecipients)
        .set({ name: to.name, email: to.email, readStatus: 'NOT_OPENED', sendStatus: 'NOT_SENT', viewedAt: null, consentedAt: null, locale: null })
        .where(eq(envelopeRecipients.id, id));
    },

    /** The place's fields name the new person (fields are stored by recipient email). */
    async moveFields(tx: DbOrTx, envelopeId: string, fromEmail: string, toEmail: string): Promise<void> {
      await tx
        .update(envelopeFields)
        .set({ recipientEmail: toEmail })
        .where(and(eq(envelopeFields.envelopeId, envelopeId), sql`lower(${envelopeFields.recipientEmail}) = lower(${fromEmail})`));
    },

    async insertEvent(tx: DbOrTx, e: { envelopeId: string; eventType: string; recipientEmail: string; details: EventDetails }): Promise<EventRow> {
      const [row] = await tx.insert(envelopeEvents).values(e).returning();
      return row;
    },
  };
}

export type HandoversStore = ReturnType<typeof createHandoversStore>;
