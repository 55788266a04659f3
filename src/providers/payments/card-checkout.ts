import type Stripe from 'stripe';
import { AppError } from '../../errors.js';

export type CheckoutInput = {
  /** Our card_top_ups row: Stripe's idempotency key and metadata, so a retried call opens no second session. */
  topUpId: string;
  customerId: string;
  amountCents: number;
  /** Prefills the payment page; null when the customer has no deliverable address. */
  email: string | null;
  successUrl: string;
  cancelUrl: string;
};

/** A hosted payment page: its provider id and the URL the browser is sent to. */
export type OpenedCheckout = { id: string; url: string };

/**
 * "Start a card payment": a hosted page at the card provider for one top-up. There is no built-in
 * default that takes cards: without a provider, balances are credited by an operator (POST /ops/…/credits).
 */
export interface CardCheckout {
  /** Calls the network: never inside a transaction. Throws CARD_PROVIDER_UNAVAILABLE when the provider fails. */
  createCheckout(input: CheckoutInput): Promise<OpenedCheckout>;
}

/** What the top-up rules read of a Checkout Session in Stripe's events. */
export type CheckoutSessionSnapshot = Pick<Stripe.Checkout.Session, 'id' | 'payment_status' | 'amount_total' | 'currency' | 'metadata' | 'client_reference_id' | 'payment_intent'>;

/** What the reversal rules read of a Charge (`charge.refunded`) and of a Dispute (`charge.dispute.*`). */
export type ChargeSnapshot = Pick<Stripe.Charge, 'id' | 'amount_refunded' | 'currency' | 'payment_intent'>;
export type DisputeSnapshot = Pick<Stripe.Dispute, 'id' | 'amount' | 'currency' | 'status' | 'payment_intent'>;

export const TOP_UP_PRODUCT_NAME = 'Signet balance top-up';

function unavailable(err: unknown): AppError {
  const e = err as { type?: string; statusCode?: number };
  return new AppError('CARD_PROVIDER_UNAVAILABLE', `Card payments did not answer (${e.type ?? 'error'}${e.statusCode ? ` ${e.statusCode}` : ''}); nothing was charged; try again in a few minutes`);
}

/** Stripe Checkout in payment mode: one line item priced in USD cents, our ids in metadata. */
export function createStripeCardCheckout(stripe: Stripe): CardCheckout {
  return {
    async createCheckout(input) {
      let session: Stripe.Checkout.Session;
      try {
        session = await stripe.checkout.sessions.create(
          {
            mode: 'payment',
            line_items: [{ quantity: 1, price_data: { currency: 'usd', unit_amount: input.amountCents, product_data: { name: TOP_UP_PRODUCT_NAME } } }],
            client_reference_id: input.customerId,
            metadata: { topUpId: input.topUpId, customerId: input.customerId },
            ...(input.email ? { customer_email: input.email } : {}),
            success_url: input.successUrl,
            cancel_url: input.cancelUrl,
          },
          // The same top-up never opens two sessions, whatever the SDK's own retry does.
          { idempotencyKey: input.topUpId },
        );
      } catch (err) {
        throw unavailable(err);
      }
      if (!session.url) throw unavailable({ type: 'no_url' });
      return { id: session.id, url: session.url };
    },
  };
}
