import type Stripe from 'stripe';
import { createEmailCodeIdentity } from './email-code.js';
import { createStripeIdentity } from './stripe-identity.js';

export { CODE_PATTERN, CODE_TTL_MS, TOKEN_PATTERN, maskEmail, type EmailCodeIdentity } from './email-code.js';
export { stripeSessionStatus, type StripeVerificationSession } from './stripe-identity.js';
export type { IdentityProvider, ProviderName, ProviderStatus } from './identity-provider.js';

/** The email provider always (built in, no setup); Stripe Identity for documents when Stripe is configured. */
export function createIdentityProviders(opts: { signingLinkSecret: string; publicUrl: string; stripe: Stripe | undefined }) {
  return {
    email: createEmailCodeIdentity({ secret: opts.signingLinkSecret, publicUrl: opts.publicUrl }),
    document: opts.stripe ? createStripeIdentity(opts.stripe) : undefined,
  };
}

export type IdentityProviders = ReturnType<typeof createIdentityProviders>;
