import { and, count, desc, eq, lt, sql } from 'drizzle-orm';
import { rowsOf, type DbOrTx } from '../../db/client.js';
import { executePrepared, preparedPer } from '../../db/prepared.js';
import { customers, ledgerEntries } from '../../db/schema/index.js';

export type LedgerRow = typeof ledgerEntries.$inferSelect;
export type Standing = { balance: bigint; sandboxLeft: number; name: string | null; consentText: string | null; brandColor: string | null; logoKey: string | null; reminderDefaults: { firstAfterDays: number; everyDays: number; max: number } | null; expiryWarningDays: number | null; defaultLocale: string | null };
export type LedgerInput = Omit<typeof ledgerEntries.$inferInsert, 'id' | 'createdAt'>;

export function createBillingRepo() {
  // Read before every billable call (the affordability check): prepared once.
  const standingStmt = preparedPer((tx) =>
    tx
      .select({ balance: customers.balanceMicros, used: customers.sandboxUsed, limit: customers.sandboxLimit, name: customers.name, consentText: customers.consentText, brandColor: customers.brandColor, logoKey: customers.logoKey, reminderDefaults: customers.reminderDefaults, expiryWarningDays: customers.expiryWarningDays, defaultLocale: customers.defaultLocale })
      .from(customers)
      .where(eq(customers.id, sql.placeholder('id')))
      .prepare('billing_standing'),
  );

  return {
    /**
     * A debit and its ledger row in one statement, both or neither: succeeds only when the balance
     * covers the amount. One round trip while the customer's row is locked. Undefined when refused.
     */
    async debitWithEntry(tx: DbOrTx, e: { customerId: string; amountMicros: bigint; operation: string; envelopeId: string | null; envelopeTitle: string | null; description: string }): Promise<{ id: string } | undefined> {
      const amount = sql`${e.amountMicros.toString()}::bigint`;
      const result = await executePrepared(tx, sql`
        WITH debited AS (
          UPDATE customers SET balance_micros = balance_micros - ${amount}
          WHERE id = ${e.customerId} AND balance_micros >= ${amount}
          RETURNING balance_micros
        )
        INSERT INTO ledger_entries (customer_id, direction, amount_micros, balance_after_micros, operation, envelope_id, envelope_title, description)
        SELECT ${e.customerId}, 'debit', ${amount}, balance_micros, ${e.operation}, ${e.envelopeId}, ${e.envelopeTitle}, ${e.description} FROM debited
        RETURNING id`);
      return rowsOf<{ id: string }>(result)[0];
    },

    /**
     * A card top-up's credit taken back: up to `maxMicros`, never below zero, with its `reversal` ledger
     * row (none when the balance is empty). The customer's row is locked first, so what is taken is what
     * the balance held.
     */
    async reverseUpTo(tx: DbOrTx, e: { customerId: string; maxMicros: bigint; description: string }): Promise<{ takenMicros: bigint; entryId: string | null }> {
      const [row] = await tx.select({ balance: customers.balanceMicros }).from(customers).where(eq(customers.id, e.customerId)).for('update');
      if (!row || row.balance <= 0n) return { takenMicros: 0n, entryId: null };
      const take = row.balance < e.maxMicros ? row.balance : e.maxMicros;
      const amount = sql`${take.toString()}::bigint`;
      const result = await tx.execute(sql`
        WITH debited AS (UPDATE customers SET balance_micros = balance_micros - ${amount} WHERE id = ${e.customerId} RETURNING balance_micros)
        INSERT INTO ledger_entries (customer_id, direction, amount_micros, balance_after_micros, description)
        SELECT ${e.customerId}, 'reversal', ${amount}, balance_micros, ${e.description} FROM debited
        RETURNING id`);
      return { takenMicros: take, entryId: rowsOf<{ id: string }>(result)[0].id };
    },

    async credit(tx: DbOrTx, customerId: string, micros: bigint): Promise<bigint | undefined> {
      const [row] = await tx
        .update(customers)
        .set({ balanceMicros: sql`${customers.balanceMicros} + ${micros}` })
        .where(eq(customers.id, customerId))
        .returning({ balance: customers.balanceMicros });
      return row?.balance;
    },

    /** Counts one free test-mode call, unless the allowance is used up. */
    async useSandbox(tx: DbOrTx, customerId: string): Promise<boolean> {
      const rows = await tx
        .update(customers)
        .set({ sandboxUsed: sql`${customers.sandboxUsed} + 1` })
        .where(and(eq(customers.id, customerId), lt(customers.sandboxUsed, customers.sandboxLimit)))
        .returning({ id: customers.id });
      return rows.length === 1;
    },

    /**
     * The balance and the sandbox allowance, read without a lock (a pre-check; the debit decides), with
     * the account's name and consent text: a create needs them next (invitations and the signing page show them), and one read is cheaper than two.
     */
    async standing(tx: DbOrTx, customerId: string): Promise<Standing | undefined> {
      const [row] = await standingStmt(tx).execute({ id: customerId });
      return row && { balance: row.balance, sandboxLeft: row.limit - row.used, name: row.name, consentText: row.consentText, brandColor: row.brandColor, logoKey: row.logoKey, reminderDefaults: row.reminderDefaults, expiryWarningDays: row.expiryWarningDays, defaultLocale: row.defaultLocale };
    },

    async balance(tx: DbOrTx, customerId: string): Promise<bigint> {
      const [row] = await tx.select({ balance: customers.balanceMicros }).from(customers).where(eq(customers.id, customerId));
      return row?.balance ?? 0n;
    },

    async insertLedger(tx: DbOrTx, entry: LedgerInput): Promise<LedgerRow> {
      const [row] = await tx.insert(ledgerEntries).values(entry).returning();
      return row;
    },

    async listLedger(tx: DbOrTx, customerId: string, page: { limit: number; offset: number }) {
      const where = eq(ledgerEntries.customerId, customerId);
      const [rows, [{ total }]] = await Promise.all([
        tx
          .select()
          .from(ledgerEntries)
          .where(where)
          .orderBy(desc(ledgerEntries.createdAt), desc(ledgerEntries.id))
          .limit(page.limit)
          .offset(page.offset),
        tx.select({ total: count() }).from(ledgerEntries).where(where),
      ]);
      return { rows, total };
    },
  };
}

export type BillingRepo = ReturnType<typeof createBillingRepo>;
