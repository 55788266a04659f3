import type Stripe from 'stripe';
import { AppError } from '../../errors.js';
import type { IdentityProvider, ProviderStatus } from './identity-provider.js';

/** Stripe's hosted verification URL expires after 48 hours (and works once): the verification's lifetime. */
export const STRIPE_SESSION_LIFETIME_MS = 48 * 3_600_000;

export type StripeVerificationSession = Pick<Stripe.Identity.VerificationSession, 'id' | 'status' | 'url' | 'last_error' | 'metadata'>;

/**
 * Stripe's session status in our names. requires_input stays pending even with a last_error: Stripe lets
 * the person try again in the same session, so only our expiry ends it (last_error is kept as the reason).
 */
export function stripeSessionStatus(s: StripeVerificationSession): ProviderStatus {
  const base = { processing: false, lastError: s.last_error?.code ?? null, url: s.url ?? null };
  switch (s.status) {
    case 'verified':
      return { ...base, status: 'verified', lastError: null, url: null };
    case 'canceled':
      return { ...base, status: 'canceled', url: null };
    case 'processing':
      return { ...base, status: 'pending', processing: true, url: null };
    default:
      return { ...base, status: 'pending' };
  }
}

/** Any Stripe failure (network, 5xx, a refusal) is the provider being unavailable for this call. */
function unavailable(err: unknown): AppError {
  const e = err as { type?: string; statusCode?: number };
  return new AppError('IDENTITY_PROVIDER_UNAVAILABLE', `Stripe Identity did not answer (${e.type ?? 'error'}${e.statusCode ? ` ${e.statusCode}` : ''}); nothing was charged; retry later`);
}

/** `id_document` verifications through Stripe Identity VerificationSessions (type document). */
export function createStripeIdentity(stripe: Stripe): IdentityProvider {
  const call = async <T>(fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      throw unavailable(err);
    }
  };

  return {
    name: 'stripe_identity',
    lifetimeMs: STRIPE_SESSION_LIFETIME_MS,
    async open(input) {
      const session = await call(() =>
        stripe.identity.verificationSessions.create({
          type: 'document',
          metadata: { verificationId: input.verificationId },
          provided_details: { email: input.email },
          ...(input.redirectUrl ? { return_url: input.redirectUrl } : {}),
        }),
      );
      return { providerRef: session.id, providerUrl: session.url ?? null, linkSalt: null, tokenHash: null };
    },
    async retrieve(ref) {
      if (!ref) return undefined;
      return stripeSessionStatus(await call(() => stripe.identity.verificationSessions.retrieve(ref)));
    },
    async cancel(ref) {
      if (!ref) return undefined;
      return stripeSessionStatus(await call(() => stripe.identity.verificationSessions.cancel(ref)));
    },
  };
}
