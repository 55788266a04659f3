import { and, eq, isNull } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { dashboardSessions } from '../../db/schema/index.js';

export type SessionRow = typeof dashboardSessions.$inferSelect;

export function createSessionsRepo() {
  return {
    async insert(tx: DbOrTx, input: Pick<SessionRow, 'customerId' | 'tokenHash' | 'method' | 'ip' | 'userAgent' | 'expiresAt'> & { now: Date }): Promise<SessionRow> {
      const { now, ...values } = input;
      const [row] = await tx.insert(dashboardSessions).values({ ...values, createdAt: now, lastSeenAt: now }).returning();
      return row;
    },

    async findLive(tx: DbOrTx, tokenHash: string): Promise<SessionRow | undefined> {
      const [row] = await tx.select().from(dashboardSessions).where(and(eq(dashboardSessions.tokenHash, tokenHash), isNull(dashboardSessions.revokedAt)));
      return row;
    },

    async touch(tx: DbOrTx, id: string, at: Date): Promise<void> {
      await tx.update(dashboardSessions).set({ lastSeenAt: at }).where(eq(dashboardSessions.id, id));
    },

    async revoke(tx: DbOrTx, tokenHash: string, at: Date): Promise<SessionRow | undefined> {
      const [row] = await tx
        .update(dashboardSessions)
        .set({ revokedAt: at })
        .where(and(eq(dashboardSessions.tokenHash, tokenHash), isNull(dashboardSessions.revokedAt)))
        .returning();
      return row;
    },
  };
}

export type SessionsRepo = ReturnType<typeof createSessionsRepo>;
