import Stripe from 'stripe';
import { AppError } from '../../errors.js';

/**
 * One Stripe client for the process (Identity now, Checkout later). `apiUrl` points it at a
 * Stripe-compatible API (stripe-mock, a local stand-in) through the SDK's host, port and protocol options.
 */
export function createStripeClient(opts: { secretKey: string; apiUrl?: string; timeoutMs?: number }): Stripe {
  const target = opts.apiUrl ? new URL(opts.apiUrl) : undefined;
  const protocol = target?.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(opts.secretKey, {
    // One retry: the SDK adds an idempotency key to retried POSTs, and a request waits on it.
    maxNetworkRetries: 1,
    timeout: opts.timeoutMs ?? 10_000,
    telemetry: false,
    ...(target && { host: target.hostname, port: target.port || (protocol === 'http' ? 80 : 443), protocol }),
  });
}

export type StripeEventVerifier = (rawBody: Buffer, signatureHeader: string | undefined) => Stripe.Event;

/** Checks Stripe-Signature over the raw body with the SDK (HMAC, 5-minute tolerance) and parses the event. */
export function stripeEventVerifier(stripe: Stripe, webhookSecret: string): StripeEventVerifier {
  return (rawBody, signatureHeader) => {
    if (!signatureHeader) throw new AppError('STRIPE_SIGNATURE_INVALID', 'The Stripe-Signature header is missing');
    try {
      return stripe.webhooks.constructEvent(rawBody, signatureHeader, webhookSecret);
    } catch {
      throw new AppError('STRIPE_SIGNATURE_INVALID', 'The Stripe-Signature header does not match the body');
    }
  };
}
