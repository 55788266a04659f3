import type Stripe from 'stripe';
import type { OperatorContext } from '../../context.js';
import type { Db, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { StripeEventVerifier } from '../../providers/payments/stripe-client.js';
import type { StripeEventsRepo } from './stripe-events.repo.js';

/** Applies one kind of Stripe event in the transaction that records it; throwing rolls both back (Stripe retries). */
export type StripeEventHandler = (tx: Tx, event: Stripe.Event, op: OperatorContext) => Promise<void>;

/**
 * POST /webhooks/stripe as a small dispatcher: the signature is checked on the raw body, then the
 * event's id is recorded (stripe_events, insert … on conflict do nothing) in the same transaction as
 * its handler runs, so an event Stripe delivers twice is applied once. Handlers come from the
 * composition root by event type: Identity's verification sessions, Checkout's top-ups, and the card
 * refunds and disputes that take top-ups back.
 */
export function createStripeEventsService(deps: { db: Db; repo: StripeEventsRepo; verify: StripeEventVerifier | undefined; handlers: Record<string, StripeEventHandler> }) {
  return {
    async receive(rawBody: Buffer, signature: string | undefined, op: OperatorContext): Promise<{ received: true; applied: boolean }> {
      if (!deps.verify) throw new AppError('NOT_FOUND', 'Stripe webhooks are not configured on this server (STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET)');
      const event = deps.verify(rawBody, signature);
      const handler = Object.hasOwn(deps.handlers, event.type) ? deps.handlers[event.type] : undefined;
      // An event type nobody handles is acknowledged and not recorded: a handler added later still sees redeliveries.
      if (!handler) return { received: true, applied: false };
      return deps.db.transaction(async (tx) => {
        if (!(await deps.repo.claim(tx, event.id, event.type))) return { received: true as const, applied: false };
        await handler(tx, event, op);
        return { received: true as const, applied: true };
      });
    },
  };
}

export type StripeEventsService = ReturnType<typeof createStripeEventsService>;
