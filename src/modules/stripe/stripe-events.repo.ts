import type { DbOrTx } from '../../db/client.js';
import { stripeEvents } from '../../db/schema/index.js';

export function createStripeEventsRepo() {
  return {
    /** Records an event id once; false when it was recorded already (Stripe delivered it again). */
    async claim(tx: DbOrTx, id: string, type: string): Promise<boolean> {
      const rows = await tx.insert(stripeEvents).values({ id, type }).onConflictDoNothing({ target: stripeEvents.id }).returning({ id: stripeEvents.id });
      return rows.length === 1;
    },
  };
}

export type StripeEventsRepo = ReturnType<typeof createStripeEventsRepo>;
