import type { DbOrTx, Tx } from '../../db/client.js';
import type { Actor, Paging, RequestContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { isLocale } from '../../i18n/locales.js';
import { formatDollars, microsToCents } from '../../lib/money.js';
import type { BillingRepo } from '../billing/billing.repo.js';
import type { AccountRepo, CustomerRow } from './account.repo.js';
import type { SummaryRepo } from './summary.repo.js';
import { logoFileOf, logoUrlOf } from './logo.js';
import type { AuditService } from '../audit/audit.service.js';
import type { TAccount, TAccountSettingsPatch, TUsageEntry } from './account.schemas.js';

/**
 * Whether the account still has the name it was given at sign-up rather than one its holder chose:
 * a self-signup is named after its email's local part (`alex` for alex@example.com) and a wallet after
 * its address. Recipients would read "alex asks you to sign", so the dashboard asks for a real one.
 * A holder who deliberately sets exactly that text is asked again: harmless, and no column is needed.
 */
export function nameIsDefault(c: Pick<CustomerRow, 'name' | 'email' | 'walletAddress'>): boolean {
  return c.name === c.email.slice(0, c.email.lastIndexOf('@')) || (c.walletAddress !== null && c.name === c.walletAddress);
}

export function createAccountService(deps: { accounts: AccountRepo; billing: BillingRepo; summary: Pick<SummaryRepo, 'totalSpent'>; audit: Pick<AuditService, 'customer'>; publicUrl: string }) {
  const toDto = (customer: CustomerRow, actor: Actor, spent: bigint | null): TAccount => ({
    accountId: customer.id,
    email: customer.email,
    name: customer.name,
    apiKeyPrefix: actor.keyPrefix ?? null,
    mode: actor.mode,
    creditsCents: microsToCents(customer.balanceMicros),
    creditsFormatted: formatDollars(customer.balanceMicros),
    balanceMicros: Number(customer.balanceMicros),
    sandboxUsed: customer.sandboxUsed,
    sandboxLimit: customer.sandboxLimit,
    createdAt: customer.createdAt.toISOString(),
    walletAddress: customer.walletAddress,
    totalSpentCents: spent === null ? null : microsToCents(spent),
    totalSpentFormatted: spent === null ? null : formatDollars(spent),
    displayName: customer.name,
    displayNameIsDefault: nameIsDefault(customer),
    notificationEmail: customer.notificationEmail,
    senderNotifications: customer.senderNotifications,
    consentText: customer.consentText,
    allowedOrigins: customer.allowedOrigins,
    brandColor: customer.brandColor,
    defaultLocale: isLocale(customer.defaultLocale) ? customer.defaultLocale : null,
    logoUrl: logoUrlOf(deps.publicUrl, logoFileOf(customer.logoKey)),
  });

  return {
    /**
     * The customer a wallet signs in as, made on its first sign-in. A wallet has no email or name of its
     * own: the name is the address and the email a synthetic, undeliverable `<address>@wallet.invalid`
     * (RFC 2606 reserves .invalid), so nothing is ever mailed to it.
     */
    async ensureWalletCustomer(tx: DbOrTx, input: { walletAddress: string; sandboxLimit: number }): Promise<{ customer: CustomerRow; created: boolean }> {
      return deps.accounts.ensureWalletCustomer(tx, { ...input, email: `${input.walletAddress}@wallet.invalid`, name: input.walletAddress });
    },

    async getAccount(db: DbOrTx, actor: Actor): Promise<TAccount> {
      const customer = await deps.accounts.findCustomer(db, actor.customerId);
      if (!customer) throw new AppError('UNAUTHORIZED', 'The credential no longer resolves to a customer');
      // Wallet callers see their spending; the query is skipped on the API-key hot path.
      const spent = actor.via === 'wallet_jwt' ? await deps.summary.totalSpent(db, customer.id) : null;
      return toDto(customer, actor, spent);
    },

    /**
     * The holder's settings. Any credential of the account may change them, a test key too: they are
     * settings, not billable work (the route bounds the body, the schema each text). An x402 payment
     * pays for one call and is no account holder. Only the account behind the credential is reachable.
     */
    async updateSettings(tx: Tx, ctx: RequestContext, patch: TAccountSettingsPatch): Promise<TAccount> {
      if (ctx.actor.via === 'x402') throw new AppError('X402_NOT_APPLICABLE', 'Account settings belong to an account: use an API key, a wallet JWT or the dashboard, not an x402 payment');
      const customer = await deps.accounts.updateSettings(tx, ctx.actor.customerId, {
        ...(patch.displayName !== undefined && { name: patch.displayName }),
        ...(patch.notificationEmail !== undefined && { notificationEmail: patch.notificationEmail }),
        ...(patch.senderNotifications !== undefined && { senderNotifications: patch.senderNotifications }),
        ...(patch.consentText !== undefined && { consentText: patch.consentText }),
        ...(patch.allowedOrigins !== undefined && { allowedOrigins: patch.allowedOrigins }),
        ...(patch.brandColor !== undefined && { brandColor: patch.brandColor?.toLowerCase() ?? null }),
        ...(patch.defaultLocale !== undefined && { defaultLocale: patch.defaultLocale }),
      });
      if (!customer) throw new AppError('UNAUTHORIZED', 'The credential no longer resolves to a customer');
      // Which settings changed, never their values: the consent text may be long, the address personal.
      await deps.audit.customer(tx, ctx, { action: 'account.update', resourceType: 'customer', resourceId: customer.id, metadata: { fields: Object.keys(patch) } });
      const spent = ctx.actor.via === 'wallet_jwt' ? await deps.summary.totalSpent(tx, customer.id) : null;
      return toDto(customer, ctx.actor, spent);
    },

    /**
     * The money ledger, newest first. Test-mode calls are never charged and leave no ledger rows, so a
     * test key sees an empty history: test credentials never read live data.
     */
    async listUsage(db: DbOrTx, actor: Actor, paging: Paging): Promise<{ rows: TUsageEntry[]; total: number }> {
      if (actor.mode === 'test') return { rows: [], total: 0 };
      const { rows, total } = await deps.billing.listLedger(db, actor.customerId, paging);
      return {
        total,
        rows: rows.map((r) => ({
          id: r.id,
          direction: r.direction,
          amountCents: microsToCents(r.amountMicros),
          amountFormatted: formatDollars(r.amountMicros),
          amountMicros: Number(r.amountMicros),
          description: r.description,
          envelopeId: r.envelopeId,
          envelopeTitle: r.envelopeTitle,
          txHash: r.txHash,
          createdAt: r.createdAt.toISOString(),
        })),
      };
    },
  };
}

export type AccountService = ReturnType<typeof createAccountService>;
