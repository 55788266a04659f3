import { and, count, desc, eq, isNull, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { preparedPer } from '../../db/prepared.js';
import { apiKeys, customers } from '../../db/schema/index.js';
import { API_KEYS_CHANNEL } from './api-key-cache.js';

export type CustomerRow = typeof customers.$inferSelect;
export type ApiKeyRow = typeof apiKeys.$inferSelect;

export function createAccountRepo() {
  // The per-request reads are prepared once per executor: drizzle then skips building the SQL and
  // PostgreSQL skips planning it, which is most of their cost on the hot path.
  const findCustomerStmt = preparedPer((tx) =>
    tx.select().from(customers).where(eq(customers.id, sql.placeholder('id'))).prepare('account_find_customer'),
  );
  const findKeyStmt = preparedPer((tx) =>
    tx
      .select({ id: apiKeys.id, customerId: apiKeys.customerId, mode: apiKeys.mode, prefix: apiKeys.prefix })
      .from(apiKeys)
      .where(and(eq(apiKeys.keyHash, sql.placeholder('keyHash')), isNull(apiKeys.revokedAt)))
      .prepare('account_find_active_key'),
  );
  const touchKeyStmt = preparedPer((tx) =>
    tx.update(apiKeys).set({ lastUsedAt: sql`now()` }).where(eq(apiKeys.id, sql.placeholder('id'))).prepare('account_touch_key'),
  );

  return {
    async insertCustomer(tx: DbOrTx, input: { email: string; emailVerified: boolean; name: string; sandboxLimit: number }): Promise<CustomerRow> {
      const [row] = await tx.insert(customers).values(input).returning();
      return row;
    },

    /**
     * The customer of a wallet, created on its first sign-in. ON CONFLICT makes two first sign-ins of
     * one wallet (two nonces, concurrently) agree on one customer.
     */
    async ensureWalletCustomer(tx: DbOrTx, input: { walletAddress: string; email: string; name: string; sandboxLimit: number }): Promise<{ customer: CustomerRow; created: boolean }> {
      const [inserted] = await tx.insert(customers).values(input).onConflictDoNothing({ target: customers.walletAddress }).returning();
      if (inserted) return { customer: inserted, created: true };
      const [existing] = await tx.select().from(customers).where(eq(customers.walletAddress, input.walletAddress));
      return { customer: existing, created: false };
    },

    async findCustomer(tx: DbOrTx, customerId: string): Promise<CustomerRow | undefined> {
      const [row] = await findCustomerStmt(tx).execute({ id: customerId });
      return row;
    },

    /** The holder's settings; only the fields given change. Undefined when the customer is gone. */
    async updateSettings(
      tx: DbOrTx,
      customerId: string,
      set: Partial<Pick<CustomerRow, 'name' | 'notificationEmail' | 'senderNotifications' | 'consentText' | 'allowedOrigins' | 'brandColor' | 'defaultLocale' | 'logoKey'>>,
    ): Promise<CustomerRow | undefined> {
      const [row] = await tx.update(customers).set(set).where(eq(customers.id, customerId)).returning();
      return row;
    },

    async insertApiKey(tx: DbOrTx, input: { customerId: string; mode: 'live' | 'test'; keyHash: string; prefix: string; label?: string | null }): Promise<ApiKeyRow> {
      const [row] = await tx.insert(apiKeys).values(input).returning();
      return row;
    },

    /** The auth hot path: one indexed lookup by hash. */
    async findActiveKeyByHash(tx: DbOrTx, keyHash: string): Promise<Pick<ApiKeyRow, 'id' | 'customerId' | 'mode' | 'prefix'> | undefined> {
      const [row] = await findKeyStmt(tx).execute({ keyHash });
      return row;
    },

    async listKeys(tx: DbOrTx, customerId: string): Promise<ApiKeyRow[]> {
      return tx.select().from(apiKeys).where(eq(apiKeys.customerId, customerId)).orderBy(desc(apiKeys.createdAt));
    },

    /**
     * The customer's active keys, counted under a lock on the customer row: two mints at once queue
     * here, so neither can pass the limit on a count the other is about to change.
     */
    async countActiveKeysLocked(tx: DbOrTx, customerId: string): Promise<number> {
      await tx.select({ id: customers.id }).from(customers).where(eq(customers.id, customerId)).for('update');
      const [row] = await tx.select({ n: count() }).from(apiKeys).where(and(eq(apiKeys.customerId, customerId), isNull(apiKeys.revokedAt)));
      return Number(row.n);
    },

    /** last_used_at: the resolver calls this at most once a minute per key and process. */
    async touchKey(tx: DbOrTx, keyId: string): Promise<void> {
      await touchKeyStmt(tx).execute({ id: keyId });
    },

    async setKeyLabel(tx: DbOrTx, customerId: string, keyId: string, label: string | null): Promise<ApiKeyRow | undefined> {
      const [row] = await tx.update(apiKeys).set({ label }).where(and(eq(apiKeys.id, keyId), eq(apiKeys.customerId, customerId))).returning();
      return row;
    },

    async revokeKey(tx: DbOrTx, customerId: string, keyId: string): Promise<ApiKeyRow | undefined> {
      const [row] = await tx
        .update(apiKeys)
        .set({ revokedAt: sql`coalesce(${apiKeys.revokedAt}, now())` })
        .where(and(eq(apiKeys.id, keyId), eq(apiKeys.customerId, customerId)))
        .returning();
      if (row) await tx.execute(sql`SELECT pg_notify(${API_KEYS_CHANNEL}, ${row.keyHash})`);
      return row;
    },
  };
}

export type AccountRepo = ReturnType<typeof createAccountRepo>;
