import { randomUUID } from 'node:crypto';
import type { OperatorContext, Paging, RequestContext } from '../../context.js';
import type { Db, DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { TOKEN_PATTERN, maskEmail, type IdentityProvider, type IdentityProviders, type ProviderStatus, type StripeVerificationSession } from '../../providers/identity/index.js';
import { stripeSessionStatus } from '../../providers/identity/index.js';
import type { AuditService } from '../audit/audit.service.js';
import type { BillingService } from '../billing/billing.service.js';
import type { Owner } from '../envelopes/envelopes.repo.js';
import { assertOpen, attemptsLeft, createVerificationCodes, effectiveStatus, type CodeSent } from './verification-codes.js';
import type { TCreateVerification } from './verifications.schemas.js';
import type { VerificationRow, VerificationStatus, VerificationsRepo } from './verifications.repo.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ownerOf = (ctx: RequestContext): Owner => ({ customerId: ctx.actor.customerId, mode: ctx.actor.mode });
const iso = (d: Date | null) => (d ? d.toISOString() : null);
const SYSTEM: OperatorContext = { actorType: 'system', requestId: null, ip: null };

declare const prepared: unique symbol;
/** A create whose provider session is open (the only way to get one is `prepareCreate`). */
export type PreparedCreate = { readonly [prepared]: true; id: string; input: TCreateVerification; provider: IdentityProvider; session: Awaited<ReturnType<IdentityProvider['open']>> };

export type VerificationsDeps = {
  db: Db;
  repo: VerificationsRepo;
  providers: IdentityProviders;
  billing: Pick<BillingService, 'charge' | 'assertAffordable'>;
  audit: Pick<AuditService, 'customer' | 'operator'>;
  now: () => Date;
};

/**
 * Identity verifications: the stored copy of what a provider (our emailed code, or Stripe Identity)
 * decides. The provider is authoritative; reads of live status and Stripe's events correct the copy in
 * a transaction with an audit row. Calls to Stripe happen before a transaction opens, never inside one.
 */
export function createVerificationsService(deps: VerificationsDeps) {
  const { repo, providers } = deps;
  const codes = createVerificationCodes({ repo, email: providers.email, billing: deps.billing, audit: deps.audit, now: deps.now });

  function toDto(row: VerificationRow) {
    const status = effectiveStatus(row, deps.now());
    const verificationUrl =
      row.provider === 'email' ? (row.linkSalt ? providers.email.urlOf(row.linkSalt) : null) : status === 'pending' ? row.providerUrl : null; // Stripe's page works once, while pending
    return {
      verificationId: row.id,
      type: row.type,
      provider: row.provider as 'email' | 'stripe_identity',
      status,
      email: row.email,
      name: row.name,
      verificationUrl,
      redirectUrl: row.redirectUrl,
      metadata: row.metadata,
      failureReason: row.failureReason,
      attemptsLeft: attemptsLeft(row),
      envelopeId: row.envelopeId,
      expiresAt: row.expiresAt.toISOString(),
      verifiedAt: iso(row.verifiedAt),
      createdAt: row.createdAt.toISOString(),
      updatedAt: row.updatedAt.toISOString(),
    };
  }

  async function requireVerification(db: DbOrTx, id: string, owner: Owner, lock = false): Promise<VerificationRow> {
    // A malformed id names nothing: 404 like an unknown one (SPEC names no INVALID_ID here).
    const row = UUID.test(id) ? await repo.find(db, id.toLowerCase(), owner, lock) : undefined;
    if (!row) throw new AppError('VERIFICATION_NOT_FOUND', 'No such verification');
    return row;
  }

  function providerOf(row: VerificationRow): IdentityProvider {
    if (row.provider === 'email') return providers.email.provider;
    if (!providers.document) throw new AppError('IDENTITY_PROVIDER_UNAVAILABLE', 'Stripe Identity is no longer configured on this server (STRIPE_SECRET_KEY)');
    return providers.document;
  }

  /**
   * The stored copy corrected to the provider's view (`live`; undefined for the email provider, whose
   * state is the row) and to the clock. Terminal states stay, with one exception: our expiry is an
   * inference, while Stripe's "verified" on a document submitted in time is a fact the customer paid for.
   */
  async function reconcile(tx: Tx, row: VerificationRow, live: ProviderStatus | undefined, audit: (tx: Tx, row: VerificationRow, meta: Record<string, unknown>) => Promise<void>) {
    const now = deps.now();
    let next: VerificationStatus = row.status;
    if (row.status === 'pending') {
      if (live && live.status !== 'pending') next = live.status;
      else if (!live?.processing && row.expiresAt.getTime() <= now.getTime()) next = 'expired';
    } else if (row.status === 'expired' && live?.status === 'verified') {
      next = 'verified';
    }
    const set: Partial<VerificationRow> = {};
    if (next !== row.status) Object.assign(set, { status: next, codeHash: null, codeExpiresAt: null }, next === 'verified' ? { verifiedAt: now, failureReason: null } : {});
    if (live && next === 'pending') {
      if (live.lastError !== row.failureReason) set.failureReason = live.lastError;
      if (live.url && live.url !== row.providerUrl) set.providerUrl = live.url;
    }
    if (Object.keys(set).length === 0) return row;
    const updated = await repo.update(tx, row.id, set);
    await audit(tx, updated, { from: row.status, to: next, ...(set.failureReason !== undefined ? { failureReason: set.failureReason } : {}) });
    return updated;
  }

  const auditAs = (op: OperatorContext) => (tx: Tx, row: VerificationRow, metadata: Record<string, unknown>) =>
    deps.audit.operator(tx, op, { customerId: row.customerId, action: 'verification.reconcile', resourceType: 'verification', resourceId: row.id, metadata: { mode: row.mode, ...metadata } });

  /** A /verify link's row, looked up by the token's hash; anything else is an invalid link. */
  async function byToken(db: DbOrTx, token: string, lock = false): Promise<VerificationRow> {
    const row = TOKEN_PATTERN.test(token) ? await repo.findByTokenHash(db, providers.email.tokenHash(token), lock) : undefined;
    if (!row) throw new AppError('VERIFICATION_LINK_INVALID', 'This verification link is not valid');
    return row;
  }

  return {
    toDto,
    createForRecipient: codes.createForRecipient,
    requestRecipientCode: codes.requestRecipientCode,
    confirmRecipientCode: codes.confirmRecipientCode,
    recipientVerification: codes.recipientVerification,
    codeMessage: codes.codeMessage,

    /** Gated recipients' verifications by engine recipient id: the id, the charge, and whether it was used. */
    async gatesOf(db: DbOrTx, engineRecipientIds: string[]) {
      const rows = await repo.findByRecipients(db, engineRecipientIds);
      return new Map(rows.map((r) => [r.engineRecipientId!, { verificationId: r.id, chargedMicros: r.chargedMicros, verified: r.status === 'verified' }]));
    },

    /** An envelope ended (or a gated recipient was replaced): their verifications still pending can no longer unlock anything. */
    async cancelGates(tx: Tx, engineRecipientIds: string[], reason: 'envelope_ended' | 'recipient_replaced' = 'envelope_ended'): Promise<void> {
      for (const r of await repo.cancelPendingOfRecipients(tx, engineRecipientIds)) {
        await deps.audit.operator(tx, SYSTEM, { customerId: r.customerId, action: 'verification.cancel', resourceType: 'verification', resourceId: r.id, metadata: { reason } });
      }
    },

    /**
     * Cheap refusals first (no Stripe, no money), then the provider's session, before any transaction:
     * a Stripe failure answers 503 with nothing stored and nothing charged.
     */
    async prepareCreate(ctx: RequestContext, input: TCreateVerification): Promise<PreparedCreate> {
      const provider = input.type === 'email' ? providers.email.provider : providers.document;
      if (!provider) throw new AppError('ID_VERIFICATION_NOT_CONFIGURED', 'id_document verifications need Stripe Identity; this server has no STRIPE_SECRET_KEY');
      // X-Service-Test-Mode applies to create-and-send only (SPEC); a test key is sandboxed anyway.
      await deps.billing.assertAffordable({ actor: ctx.actor, operation: 'verification_create', testModeHeader: false });
      const id = randomUUID();
      const session = await provider.open({ verificationId: id, email: input.email, name: input.name ?? null, redirectUrl: input.redirectUrl ?? null });
      return { id, input, provider, session } as PreparedCreate;
    },

    async create(tx: Tx, ctx: RequestContext, p: PreparedCreate) {
      const { input } = p;
      const charge = await deps.billing.charge(tx, { actor: ctx.actor, operation: 'verification_create', testModeHeader: false, description: `Identity verification (${input.type}) of ${input.email}` });
      const row = await repo.insert(tx, {
        id: p.id,
        customerId: ctx.actor.customerId,
        mode: ctx.actor.mode,
        type: input.type,
        email: input.email,
        name: input.name ?? null,
        redirectUrl: input.redirectUrl ?? null,
        metadata: input.metadata ?? {},
        provider: p.provider.name,
        ...p.session,
        chargedMicros: charge.sandbox ? 0n : charge.amountMicros,
        expiresAt: new Date(deps.now().getTime() + p.provider.lifetimeMs),
      });
      await deps.audit.customer(tx, ctx, { action: 'verification.create', resourceType: 'verification', resourceId: row.id, metadata: { type: input.type, provider: p.provider.name } });
      return toDto(row);
    },

    async list(db: DbOrTx, ctx: RequestContext, status: VerificationStatus | undefined, paging: Paging) {
      const { rows, total } = await repo.list(db, ownerOf(ctx), { status, now: deps.now() }, paging);
      return { rows: rows.map(toDto), total };
    },

    async get(db: DbOrTx, ctx: RequestContext, id: string) {
      return toDto(await requireVerification(db, id, ownerOf(ctx)));
    },

    /** Live status: the provider is asked first (outside the transaction), then the stored copy is corrected. */
    async liveStatus(db: Db, ctx: RequestContext, id: string) {
      const stored = await requireVerification(db, id, ownerOf(ctx));
      // Verified, failed and canceled are final; only a pending or expired one can still change.
      const live = stored.status === 'pending' || stored.status === 'expired' ? await providerOf(stored).retrieve(stored.providerRef) : undefined;
      return db.transaction(async (tx) => {
        const row = await requireVerification(tx, id, ownerOf(ctx), true);
        return toDto(await reconcile(tx, row, live, (t, r, metadata) => deps.audit.customer(t, ctx, { action: 'verification.reconcile', resourceType: 'verification', resourceId: r.id, metadata })));
      });
    },

    /** Stripe first (before the transaction): a session Stripe will not cancel answers with its status instead. */
    async prepareCancel(db: DbOrTx, ctx: RequestContext, id: string): Promise<ProviderStatus | undefined> {
      const row = await requireVerification(db, id, ownerOf(ctx));
      if (row.engineRecipientId) throw new AppError('VERIFICATION_NOT_CANCELABLE', "A signing recipient's verification ends with its envelope");
      if (effectiveStatus(row, deps.now()) !== 'pending') return undefined;
      const provider = providerOf(row);
      return provider.cancel(row.providerRef).catch(() => provider.retrieve(row.providerRef));
    },

    /** pending → canceled (free; the charge stays: the provider's work was done). Canceling twice answers the same. */
    async cancel(tx: Tx, ctx: RequestContext, id: string, live: ProviderStatus | undefined) {
      const row = await requireVerification(tx, id, ownerOf(ctx), true);
      if (row.engineRecipientId) throw new AppError('VERIFICATION_NOT_CANCELABLE', "A signing recipient's verification ends with its envelope");
      if (row.status === 'canceled') return toDto(row);
      assertOpen(row, deps.now());
      if (live && live.status !== 'pending' && live.status !== 'canceled') {
        throw new AppError('VERIFICATION_NOT_PENDING', `Stripe reports this verification ${live.status}; GET /v1/verifications/${row.id}/status records it`, { status: live.status });
      }
      const updated = await repo.update(tx, row.id, { status: 'canceled', codeHash: null, codeExpiresAt: null });
      await deps.audit.customer(tx, ctx, { action: 'verification.cancel', resourceType: 'verification', resourceId: row.id });
      return toDto(updated);
    },

    /** A Stripe identity.verification_session.* event, in the webhook's transaction; sessions not ours are ignored. */
    async applyStripeSession(tx: Tx, session: StripeVerificationSession, op: OperatorContext = SYSTEM): Promise<void> {
      let row = await repo.findByProviderRef(tx, 'stripe_identity', session.id, true);
      const byMetadata = session.metadata?.verificationId;
      if (!row && byMetadata && UUID.test(byMetadata)) row = await repo.findById(tx, byMetadata, true);
      if (!row || row.provider !== 'stripe_identity') return;
      await reconcile(tx, row, stripeSessionStatus(session), auditAs(op));
    },

    /** The sweep: overdue pending verifications become expired. */
    async expireDue(tx: Tx): Promise<number> {
      const rows = await repo.expireDue(tx, deps.now());
      for (const r of rows) await deps.audit.operator(tx, SYSTEM, { customerId: r.customerId, action: 'verification.expire', resourceType: 'verification', resourceId: r.id });
      return rows.length;
    },

    /** The /verify page: what to show for a link; undefined for a link that names no verification. */
    async pageView(db: DbOrTx, token: string) {
      const row = await byToken(db, token).catch(() => undefined);
      if (!row) return undefined;
      const now = deps.now();
      const codeLive = row.codeHash !== null && row.codeExpiresAt !== null && row.codeExpiresAt.getTime() > now.getTime();
      return { status: effectiveStatus(row, now), sentTo: maskEmail(row.email), codeLive, attemptsLeft: attemptsLeft(row) ?? 0, redirectUrl: row.redirectUrl, name: row.name };
    },

    async pageRequestCode(token: string, op: OperatorContext): Promise<CodeSent> {
      return deps.db.transaction(async (tx) => codes.requestCode(tx, await byToken(tx, token, true), op));
    },

    /** A refused code is thrown only after its transaction committed the attempt it counted. */
    async pageConfirm(token: string, code: string, op: OperatorContext) {
      const { row, checked } = await deps.db.transaction(async (tx) => {
        const locked = await byToken(tx, token, true);
        return { row: locked, checked: await codes.confirmCode(tx, locked, code, op) };
      });
      if (checked.verified) return { status: 'verified' as const, verifiedAt: iso(checked.verifiedAt), redirectUrl: row.redirectUrl };
      if (checked.attemptsLeft === 0) throw new AppError('VERIFICATION_FAILED', 'Too many wrong codes: this verification failed', { status: 'failed', attemptsLeft: 0 });
      throw new AppError('INVALID_CODE', `That code is not right; ${checked.attemptsLeft} ${checked.attemptsLeft === 1 ? 'attempt' : 'attempts'} left`, { attemptsLeft: checked.attemptsLeft });
    },
  };
}

export type VerificationsService = ReturnType<typeof createVerificationsService>;
