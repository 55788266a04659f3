import { and, eq, gt, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { customers, envelopes, prepareLinks } from '../../db/schema/index.js';

export type PrepareLinkRow = typeof prepareLinks.$inferSelect;

export function createPrepareLinksRepo() {
  return {
    async insert(tx: DbOrTx, row: typeof prepareLinks.$inferInsert): Promise<PrepareLinkRow> {
      const [inserted] = await tx.insert(prepareLinks).values(row).returning();
      return inserted;
    },

    /** A live link by its token's hash, with its envelope's status and the account's framing origins: unexpired, not revoked. */
    async findLive(tx: DbOrTx, tokenHash: string, now: Date): Promise<(PrepareLinkRow & { envelopeStatus: string; allowedOrigins: string[] }) | undefined> {
      const [row] = await tx
        .select({ link: prepareLinks, envelopeStatus: envelopes.status, allowedOrigins: customers.allowedOrigins })
        .from(prepareLinks)
        .innerJoin(envelopes, eq(envelopes.id, prepareLinks.envelopeId))
        .innerJoin(customers, eq(customers.id, prepareLinks.customerId))
        .where(and(eq(prepareLinks.tokenHash, tokenHash), isNull(prepareLinks.revokedAt), gt(prepareLinks.expiresAt, now)));
      return row && { ...row.link, envelopeStatus: row.envelopeStatus, allowedOrigins: row.allowedOrigins };
    },
  };
}

export type PrepareLinksRepo = ReturnType<typeof createPrepareLinksRepo>;
