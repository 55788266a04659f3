import { and, eq, gt, isNull, lt } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { walletNonces } from '../../db/schema/index.js';

export type WalletNonceRow = typeof walletNonces.$inferSelect;

export function createAuthRepo() {
  return {
    async insertNonce(tx: DbOrTx, input: { nonceHash: string; walletAddress: string; createdAt: Date; expiresAt: Date }): Promise<void> {
      await tx.insert(walletNonces).values(input);
    },

    async findNonce(tx: DbOrTx, nonceHash: string): Promise<WalletNonceRow | undefined> {
      const [row] = await tx.select().from(walletNonces).where(eq(walletNonces.nonceHash, nonceHash));
      return row;
    },

    /**
     * Spends the nonce: one conditional UPDATE, so among concurrent verifies exactly one sees the row
     * come back (the others find used_at set, or wait on the row lock and then find it set).
     */
    async consumeNonce(tx: DbOrTx, input: { nonceHash: string; walletAddress: string; now: Date }): Promise<boolean> {
      const rows = await tx
        .update(walletNonces)
        .set({ usedAt: input.now })
        .where(
          and(
            eq(walletNonces.nonceHash, input.nonceHash),
            eq(walletNonces.walletAddress, input.walletAddress),
            isNull(walletNonces.usedAt),
            gt(walletNonces.expiresAt, input.now),
          ),
        )
        .returning({ id: walletNonces.id });
      return rows.length === 1;
    },

    /** Nonces, used or not, that expired before `before`. */
    async purgeExpired(tx: DbOrTx, before: Date): Promise<number> {
      const rows = await tx.delete(walletNonces).where(lt(walletNonces.expiresAt, before)).returning({ id: walletNonces.id });
      return rows.length;
    },
  };
}

export type AuthRepo = ReturnType<typeof createAuthRepo>;
