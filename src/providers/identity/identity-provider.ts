/**
 * Who checks an identity: the built-in `email` provider (a code we email; its state is our own row) or
 * `stripe_identity` (an identity document on Stripe's hosted page). The provider is authoritative for
 * live status; the verifications module keeps the stored copy and applies the rules.
 */
export type ProviderName = 'email' | 'stripe_identity';

/** A provider's live view of one verification, in our status names. */
export type ProviderStatus = {
  status: 'pending' | 'verified' | 'failed' | 'canceled';
  /** Submitted and being checked (Stripe `processing`): a result is coming. */
  processing: boolean;
  /** Why the last check failed while the person may still try again (Stripe `last_error.code`). */
  lastError: string | null;
  /** The hosted page as the provider gives it now (Stripe hands a fresh one while input is required). */
  url: string | null;
};

export type OpenInput = { verificationId: string; email: string; name: string | null; redirectUrl: string | null };

/** What the verification row keeps of an opened session. */
export type OpenedSession = {
  providerRef: string | null;
  /** The provider's hosted page, if it has one (the email provider's page is derived from the link salt). */
  providerUrl: string | null;
  linkSalt: string | null;
  tokenHash: string | null;
};

export interface IdentityProvider {
  readonly name: ProviderName;
  /** How long a verification stays open: its expiresAt is creation plus this. */
  readonly lifetimeMs: number;
  /** Opens a session at the provider. May call the network: never inside a transaction. */
  open(input: OpenInput): Promise<OpenedSession>;
  /** Live status at the provider; undefined when our row is the provider's state (email). */
  retrieve(providerRef: string | null): Promise<ProviderStatus | undefined>;
  /** Cancels at the provider and answers its status afterwards; undefined when there is nothing to cancel there. */
  cancel(providerRef: string | null): Promise<ProviderStatus | undefined>;
}
