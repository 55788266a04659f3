import type { DbOrTx } from '../../db/client.js';
import type { Actor } from '../../context.js';
import { TERMINAL_STATUSES } from '../../engine/engine.js';
import { AppError } from '../../errors.js';
import { formatDollars, microsToCents } from '../../lib/money.js';
import type { TAccountSummary } from './account.schemas.js';
import type { SummaryRepo } from './summary.repo.js';

const DAY_MS = 86_400_000;

/** GET /v1/account/summary: the wallet dashboard's numbers, for a wallet JWT only. */
export function createSummaryService(deps: { repo: SummaryRepo; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());
  return {
    /**
     * Net spending per UTC day over the last `days` days, today included, oldest first; a day without
     * spending is a zero, so a chart gets one bar per day.
     */
    async dailySpending(db: DbOrTx, customerId: string, days = 30): Promise<{ date: string; micros: bigint }[]> {
      const today = now();
      const dayStart = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
      const spent = new Map((await deps.repo.spentByDay(db, customerId, new Date(dayStart - (days - 1) * DAY_MS))).map((d) => [d.bucket, d.micros]));
      return Array.from({ length: days }, (_, i) => {
        const date = new Date(dayStart - (days - 1 - i) * DAY_MS).toISOString().slice(0, 10);
        return { date, micros: spent.get(date) ?? 0n };
      });
    },

    async getSummary(db: DbOrTx, actor: Actor): Promise<TAccountSummary> {
      if (actor.via !== 'wallet_jwt' || !actor.walletAddress) throw new AppError('WALLET_JWT_REQUIRED', 'The account summary is for wallet callers: sign in with GET /v1/auth/challenge and POST /v1/auth/verify and send the JWT');
      const owner = { customerId: actor.customerId, mode: actor.mode };
      const today = now();
      const dayStart = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), today.getUTCDate());
      const sinceDay = new Date(dayStart - 29 * DAY_MS);
      const sinceMonth = new Date(Date.UTC(today.getUTCFullYear(), today.getUTCMonth() - 11, 1));
      const [total, byStatus, byDay, byMonth, pending] = await Promise.all([
        deps.repo.totalSpent(db, actor.customerId),
        deps.repo.envelopeCountsByStatus(db, owner),
        deps.repo.spentByDay(db, actor.customerId, sinceDay),
        deps.repo.spentByMonth(db, actor.customerId, sinceMonth),
        deps.repo.recentOpenEnvelopes(db, owner, TERMINAL_STATUSES, 10),
      ]);
      return {
        walletAddress: actor.walletAddress,
        summary: {
          totalEnvelopes: Object.values(byStatus).reduce((a, b) => a + b, 0),
          totalSpentCents: microsToCents(total),
          totalSpentFormatted: formatDollars(total),
          byStatus,
        },
        spending: {
          byDay: byDay.map((d) => ({ date: d.bucket, cents: microsToCents(d.micros) })),
          byMonth: byMonth.map((m) => ({ month: m.bucket, cents: microsToCents(m.micros) })),
        },
        pendingEnvelopes: pending.map((e) => ({ envelopeId: e.id, title: e.title, status: e.status, createdAt: e.createdAt.toISOString(), updatedAt: e.updatedAt.toISOString() })),
      };
    },
  };
}

export type SummaryService = ReturnType<typeof createSummaryService>;
