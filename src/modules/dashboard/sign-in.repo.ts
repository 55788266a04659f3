import { and, asc, count, eq, gt, isNull, lt, min, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { customerIdentities, customers, dashboardSessions, dashboardSignIns } from '../../db/schema/index.js';

export type SignInRow = typeof dashboardSignIns.$inferSelect;
export type SignInKind = SignInRow['kind'];
type Customer = typeof customers.$inferSelect;

/** Two-key advisory locks live apart from the one-key locks of migrations and periodic tasks; this names ours. */
const SIGN_IN_LOCK_SPACE = 7_140_221;

export function createSignInRepo() {
  return {
    async insert(tx: DbOrTx, values: Omit<typeof dashboardSignIns.$inferInsert, 'id' | 'usedAt'> & { createdAt: Date }): Promise<SignInRow> {
      const [row] = await tx.insert(dashboardSignIns).values(values).returning();
      return row;
    },

    async findById(tx: DbOrTx, id: string): Promise<SignInRow | undefined> {
      const [row] = await tx.select().from(dashboardSignIns).where(eq(dashboardSignIns.id, id));
      return row;
    },

    /** A live (unused, unexpired) attempt by its token's hash. */
    async findLive(tx: DbOrTx, kind: SignInKind, tokenHash: string, now: Date): Promise<SignInRow | undefined> {
      const [row] = await tx
        .select()
        .from(dashboardSignIns)
        .where(and(eq(dashboardSignIns.kind, kind), eq(dashboardSignIns.tokenHash, tokenHash), isNull(dashboardSignIns.usedAt), gt(dashboardSignIns.expiresAt, now)));
      return row;
    },

    /** Spends an attempt: one conditional UPDATE, so of two concurrent uses exactly one gets the row. */
    async consume(tx: DbOrTx, kind: SignInKind, tokenHash: string, now: Date): Promise<SignInRow | undefined> {
      const [row] = await tx
        .update(dashboardSignIns)
        .set({ usedAt: now })
        .where(and(eq(dashboardSignIns.kind, kind), eq(dashboardSignIns.tokenHash, tokenHash), isNull(dashboardSignIns.usedAt), gt(dashboardSignIns.expiresAt, now)))
        .returning();
      return row;
    },

    /** Attempts of one kind since a moment, by IP or by address and IP, and the oldest of them (when the window frees up). */
    async countSince(tx: DbOrTx, kind: SignInKind, by: { ip: string; email?: string }, since: Date): Promise<{ n: number; oldest: Date | null }> {
      const who = by.email === undefined ? eq(dashboardSignIns.ip, by.ip) : and(eq(dashboardSignIns.email, by.email), eq(dashboardSignIns.ip, by.ip));
      const [row] = await tx
        .select({ n: count(), oldest: min(dashboardSignIns.createdAt) })
        .from(dashboardSignIns)
        .where(and(eq(dashboardSignIns.kind, kind), who, gt(dashboardSignIns.createdAt, since)));
      return { n: Number(row?.n ?? 0), oldest: row?.oldest ? new Date(row.oldest) : null };
    },

    /** Serializes, until the transaction ends, everything keyed by the same value (an address, an IP, an identity). */
    async lock(tx: DbOrTx, key: string): Promise<void> {
      await tx.execute(sql`SELECT pg_advisory_xact_lock(${SIGN_IN_LOCK_SPACE}::int, hashtext(${key}))`);
    },

    async findIdentity(tx: DbOrTx, issuer: string, subject: string): Promise<typeof customerIdentities.$inferSelect | undefined> {
      const [row] = await tx.select().from(customerIdentities).where(and(eq(customerIdentities.issuer, issuer), eq(customerIdentities.subject, subject)));
      return row;
    },

    async bindIdentity(tx: DbOrTx, values: { issuer: string; subject: string; customerId: string; email: string | null; createdAt: Date }): Promise<void> {
      await tx.insert(customerIdentities).values(values);
    },

    /**
     * The account an address signs into: the oldest customer whose address (any case) was verified,
     * never a wallet's. An account with the address unverified is no one's to find.
     */
    async findCustomerByEmail(tx: DbOrTx, email: string): Promise<Customer | undefined> {
      const [row] = await tx
        .select()
        .from(customers)
        .where(and(sql`lower(${customers.email}) = ${email}`, eq(customers.emailVerified, true), isNull(customers.walletAddress)))
        .orderBy(asc(customers.createdAt), asc(customers.id))
        .limit(1);
      return row;
    },

    async markEmailVerified(tx: DbOrTx, customerId: string): Promise<Customer> {
      const [row] = await tx.update(customers).set({ emailVerified: true }).where(eq(customers.id, customerId)).returning();
      return row;
    },

    /**
     * Housekeeping: sign-in attempts past the rate-limit window (kept a day), and sessions that ended
     * (signed out, past their end, or idle) more than `sessionsEndedBefore` ago.
     */
    async purge(tx: DbOrTx, input: { signInsBefore: Date; sessionsEndedBefore: Date; idleMs: number }): Promise<{ signIns: number; sessions: number }> {
      const signIns = await tx.delete(dashboardSignIns).where(lt(dashboardSignIns.createdAt, input.signInsBefore)).returning({ id: dashboardSignIns.id });
      const idleBefore = new Date(input.sessionsEndedBefore.getTime() - input.idleMs);
      const sessions = await tx
        .delete(dashboardSessions)
        .where(
          or(
            lt(dashboardSessions.revokedAt, input.sessionsEndedBefore),
            lt(dashboardSessions.expiresAt, input.sessionsEndedBefore),
            lt(dashboardSessions.lastSeenAt, idleBefore),
          ),
        )
        .returning({ id: dashboardSessions.id });
      return { signIns: signIns.length, sessions: sessions.length };
    },
  };
}

export type SignInRepo = ReturnType<typeof createSignInRepo>;
