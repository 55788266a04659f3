import { and, eq, gt, isNull, sql } from 'drizzle-orm';
import type { DbOrTx, Tx } from '../../db/client.js';
import { customers, embedLinks, engineRecipients, envelopeRecipients, envelopes } from '../../db/schema/index.js';

export type NewEmbedLink = { customerId: string; envelopeId: string; engineRecipientId: string; tokenHash: string; expiresAt: Date };

export function createEmbedRepo() {
  return {
    async insert(tx: Tx, link: NewEmbedLink): Promise<void> {
      await tx.insert(embedLinks).values(link);
    },

    /**
     * Opens a link once: the row is marked opened in the same statement that finds it, so two opens
     * racing for one URL cannot both win. Answers what the page needs (whom it is for, who may frame it).
     */
    async open(tx: Tx, tokenHash: string) {
      const [row] = await tx
        .update(embedLinks)
        .set({ openedAt: sql`now()` })
        .where(and(eq(embedLinks.tokenHash, tokenHash), isNull(embedLinks.openedAt), gt(embedLinks.expiresAt, sql`now()`)))
        .returning({ envelopeId: embedLinks.envelopeId, engineRecipientId: embedLinks.engineRecipientId, customerId: embedLinks.customerId });
      if (!row) return undefined;
      const [more] = await tx
        .select({ allowedOrigins: customers.allowedOrigins, position: envelopeRecipients.position })
        .from(customers)
        .innerJoin(envelopes, eq(envelopes.customerId, customers.id))
        .innerJoin(envelopeRecipients, and(eq(envelopeRecipients.envelopeId, envelopes.id), eq(envelopeRecipients.engineRecipientId, row.engineRecipientId)))
        .where(and(eq(customers.id, row.customerId), eq(envelopes.id, row.envelopeId)));
      return more && { ...row, ...more };
    },

    /** The account colour behind a recipient's signing token hash (the local engine's recipients). */
    async brandColorOfToken(db: DbOrTx, tokenHash: string): Promise<string | null> {
      const [row] = await db
        .select({ brandColor: customers.brandColor })
        .from(engineRecipients)
        .innerJoin(envelopes, eq(envelopes.engineEnvelopeId, sql`${engineRecipients.documentId}::text`))
        .innerJoin(customers, eq(customers.id, envelopes.customerId))
        .where(eq(engineRecipients.tokenHash, tokenHash))
        .limit(1);
      return row?.brandColor ?? null;
    },
  };
}

export type EmbedRepo = ReturnType<typeof createEmbedRepo>;
