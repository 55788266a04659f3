import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { HTTPAdapter } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import type { PaidCall } from '../../context.js';
import type { X402Config } from '../../config.js';
import { pgErrorCode, type Db, type Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { formatUsd } from '../../lib/money.js';
import { PRICES, type BillableOperation } from '../../lib/prices.js';
import type { PaymentGate } from '../../http/idempotency-core.js';
import type { X402Chain } from '../../providers/payments/x402-chain.js';
import type { X402Facilitator } from '../../providers/payments/x402-facilitator.js';
import type { AuditService } from '../audit/audit.service.js';
import type { RefundsService } from '../billing/refunds.service.js';
import type { BillingService } from '../billing/billing.service.js';
import type { Metrics } from '../ops/metrics.js';
import type { SettlementRow, X402Repo } from './x402.repo.js';

/** How long a signed authorization may take to reach us and settle. */
const MAX_TIMEOUT_SECONDS = 300;

type Deps = {
  db: Db;
  config: X402Config;
  facilitator: X402Facilitator;
  /** Reads the asset's authorizations on-chain (X402_RPC_URL); undefined: the sweep cannot look and alerts an operator instead. */
  chain: Pick<X402Chain, 'authorization'> | undefined;
  repo: X402Repo;
  billing: Pick<BillingService, 'recordPayment' | 'balanceOf'>;
  refunds: Pick<RefundsService, 'walletRefund'>;
  audit: Pick<AuditService, 'alert'>;
  topUpUrl: string;
  /** Where a settlement that could not even be recorded is written down. */
  log: { error(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  metrics: Pick<Metrics, 'x402Settlement'>;
};

/** What a paid call is: its price and where it lives (the resource the payer signs for). */
export type PaidResource = { priceMicros: bigint; url: string; description: string; adapter: HTTPAdapter };

/** A payment the facilitator verified for a resource (its matching terms), bound to its payer's customer. */
export type PaymentContext = PaidResource & { payload: PaymentPayload; requirements: PaymentRequirements; customerId: string; payer: string; requestId: string };

/**
 * A settlement older than this is no longer its call's: that call answered, or its process died. The
 * sweep then orphans a `settled` one (a refund) and resolves a `pending` one on-chain.
 */
const STALE_SETTLEMENT_MS = 10 * 60_000;
/** A transfer is not looked for on-chain until this long after its authorization's validBefore (clock skew). */
const EXPIRY_SLACK_MS = 60_000;
/** A pending settlement still unresolved after this (an authorization valid for ever) is left to an operator. */
const MAX_PENDING_MS = 24 * 3_600_000;
/** The latest date PostgreSQL and JavaScript both hold comfortably (9999-12-31), in seconds. */
const LAST_SECOND = 253_402_300_799;
const UNIQUE_VIOLATION = '23505';

/**
 * x402 v2 around one paid call, in the order the atomicity needs (DESIGN §4.17, §4.18): verify before the
 * work; then, with no transaction open, the settlement written down as pending, the settle, and its
 * outcome recorded, each committed on its own; then the work's transaction, which counts the settlement
 * for the call as it commits. Money that moved is thus always on record: a call that does not commit
 * after its settle leaves a settled row (refunded), and a settle with no clear outcome a pending one (the
 * sweep looks on-chain). @x402/core speaks the protocol; this maps its outcomes to SPEC.md's errors.
 */
export function createX402Service(deps: Deps) {
  const { config } = deps;
  const priceBody = (micros: bigint) => ({ priceUsd: formatUsd(micros), priceMicros: Number(micros) });

  /** Asset units for a price in micros: the configured asset is a USD token with 6 decimals. */
  const assetAmount = (micros: bigint) => micros.toString();

  async function server() {
    try {
      return await deps.facilitator.server();
    } catch (err) {
      throw unavailable(err);
    }
  }

  async function requirementsFor(resource: PaidResource): Promise<PaymentRequirements[]> {
    const s = await server();
    // Given as an asset amount, not as money: a local or custom token has no default price table.
    const extra = { name: config.assetName, version: config.assetVersion };
    return s.buildPaymentRequirements({
      scheme: 'exact',
      network: config.network as PaymentRequirements['network'],
      payTo: config.payTo,
      price: { amount: assetAmount(resource.priceMicros), asset: config.asset, extra },
      maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
      extra,
    });
  }

  async function paymentRequiredHeader(resource: PaidResource, requirements: PaymentRequirements[], error: string | undefined): Promise<Record<string, string>> {
    const s = await server();
    const required = await s.createPaymentRequiredResponse(requirements, { url: resource.url, description: resource.description, mimeType: 'application/json' }, error, undefined, {
      request: { adapter: resource.adapter, path: resource.adapter.getPath(), method: resource.adapter.getMethod() },
    });
    return { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(required), 'Cache-Control': 'no-store' };
  }

  /** A refusal by the facilitator, in SPEC.md's terms. */
  async function refusal(ctx: PaidResource & { customerId?: string }, requirements: PaymentRequirements[], reason: string | undefined, message: string | undefined): Promise<AppError> {
    const why = reason ?? 'payment_invalid';
    const headers = await paymentRequiredHeader(ctx, requirements, why).catch(() => ({}) as Record<string, string>);
    if (/signature/.test(why) && !/parse/.test(why)) {
      return new AppError('INVALID_SIGNATURE', 'The payment authorization was not signed by the address it claims to come from', { reason: why }, headers);
    }
    if (/insufficient/.test(why)) {
      // The payer's prepaid balance, which could pay instead (none before its first payment made its customer).
      const balance = ctx.customerId ? await deps.billing.balanceOf(ctx.customerId) : 0n;
      return new AppError(
        'INSUFFICIENT_BALANCE',
        `The paying wallet holds less than USD ${formatUsd(ctx.priceMicros)} of the asset; fund it on-chain and sign a new payment`,
        { ...priceBody(ctx.priceMicros), balanceUsd: formatUsd(balance), balanceMicros: Number(balance), topUpUrl: deps.topUpUrl, retryable: false, reason: why },
        headers,
      );
    }
    return new AppError('PAYMENT_INVALID', `The payment was refused: ${message ? `${why}: ${message}` : why}`, { reason: why, ...priceBody(ctx.priceMicros) }, headers);
  }

  /** The facilitator could not answer: nothing was charged; the same Idempotency-Key may be retried. */
  function unavailable(err: unknown): AppError {
    return new AppError('RELAYSTATION_UNAVAILABLE', `The payment facilitator is unavailable: ${(err as Error)?.message ?? String(err)}`.slice(0, 300), { retryable: true }, { 'Retry-After': '5' });
  }

  /** An operator alert outside any transaction of the call's; when even that fails, the log is the record. */
  async function alert(input: Parameters<AuditService['alert']>[1], logged: object): Promise<void> {
    try {
      await deps.db.transaction((tx) => deps.audit.alert(tx, input));
    } catch {
      deps.log.error(logged, input.message);
    }
  }

  /** What the chain says of a pending settlement: landed (refund it), never will (failed), not yet (wait), or unknown. */
  async function outcomeOnChain(row: SettlementRow): Promise<{ kind: 'landed'; txHash: string } | { kind: 'failed' | 'wait' | 'unknown' }> {
    if (!deps.chain || !row.nonce) return { kind: 'unknown' };
    const state = await deps.chain.authorization(row.payer, row.nonce, row.createdAt);
    if (state.used) return state.txHash ? { kind: 'landed', txHash: state.txHash } : { kind: 'unknown' };
    if (row.validBefore && row.validBefore.getTime() + EXPIRY_SLACK_MS < Date.now()) return { kind: 'failed' };
    return { kind: row.createdAt.getTime() + MAX_PENDING_MS < Date.now() ? 'unknown' : 'wait' };
  }

  return {
    /** Periodic: settlements whose call's process died between settle and commit are refunds due. */
    async orphanStaleSettlements(tx: Tx, olderThanMs = STALE_SETTLEMENT_MS): Promise<number> {
      const rows = await deps.repo.orphanStale(tx, olderThanMs);
      for (const row of rows) await deps.refunds.walletRefund(tx, row, 'the paid call never committed (its process stopped after the payment settled)');
      return rows.length;
    },

    /**
     * The sweep's job: pending settlements whose call is over (answered 503, or its process died) are
     * resolved on-chain, each read with no transaction open and resolved in a short one: a transfer that
     * landed is refunded (the call did not commit), an authorization past its validBefore unused failed,
     * one still valid waits for the next run. With no X402_RPC_URL, or a chain that cannot tell, an
     * operator is alerted. Answers how many rows it resolved.
     */
    async resolvePendingSettlements(olderThanMs = STALE_SETTLEMENT_MS): Promise<number> {
      let resolved = 0;
      for (const row of await deps.repo.stalePending(deps.db, olderThanMs)) {
        try {
          const outcome = await outcomeOnChain(row);
          if (outcome.kind === 'wait') continue;
          const done = await deps.db.transaction(async (tx) => {
            if (outcome.kind === 'failed') return deps.repo.resolvePending(tx, row.id, { status: 'failed' });
            if (outcome.kind === 'landed') {
              const orphaned = await deps.repo.resolvePending(tx, row.id, { status: 'orphaned', txHash: outcome.txHash });
              if (orphaned) await deps.refunds.walletRefund(tx, orphaned, 'its settle had no clear outcome and the call was not done; the transfer landed on-chain');
              return orphaned;
            }
            const unknown = await deps.repo.resolvePending(tx, row.id, { status: 'unknown' });
            if (unknown) {
              const why = !deps.chain
                ? 'X402_RPC_URL is not set, so the chain was not read'
                : row.createdAt.getTime() + MAX_PENDING_MS < Date.now()
                  ? 'its authorization is still unused on-chain a day on, and valid'
                  : 'the authorization is used on-chain with no transfer in the blocks read (cancelled by its payer?)';
              await deps.audit.alert(tx, {
                kind: 'x402_settle_unknown',
                message: `x402 settlement ${row.id} by ${row.payer} (USD ${formatUsd(row.amountMicros)}, nonce ${row.nonce}${row.txHash ? `, transaction ${row.txHash}` : ''}) is unresolved: ${why}. Check the chain; if the transfer landed, refund it`,
                customerId: row.customerId,
                resourceType: 'x402_settlement',
                resourceId: row.id,
                data: { payer: row.payer, nonce: row.nonce, txHash: row.txHash },
              });
            }
            return unknown;
          });
          if (done) resolved++;
        } catch (err) {
          // The chain or the database failed: the row stays pending for the next run.
          deps.log.warn({ settlementId: row.id, err: (err as Error).message }, 'x402 settlement sweep: could not resolve a pending settlement');
        }
      }
      return resolved;
    },

    /** The price of a paid route for an x402 caller: its own price, else X402_MIN_PRICE. */
    priceOf(operation: BillableOperation | undefined): bigint {
      return operation ? PRICES[operation].micros : config.minPriceMicros;
    },

    /** No credentials on a paid route: 402 with PAYMENT-REQUIRED and the price in the body. */
    async paymentRequired(resource: PaidResource): Promise<AppError> {
      const requirements = await requirementsFor(resource);
      const headers = await paymentRequiredHeader(resource, requirements, 'Payment required');
      return new AppError('PAYMENT_REQUIRED', `This call costs USD ${formatUsd(resource.priceMicros)}: pay it with x402 (PAYMENT-SIGNATURE header) or use an API key`, priceBody(resource.priceMicros), headers);
    },

    /**
     * The facilitator's verify of a payment for this resource, before anything is done for its payer
     * (DESIGN §4.20): answers our terms it matches, or throws the refusal (402, 401) or 503.
     */
    async verify(ctx: PaidResource & { payload: PaymentPayload }): Promise<PaymentRequirements> {
      const requirements = await requirementsFor(ctx);
      // A payment pays the call it was signed for, not another of the same price (the resource is echoed
      // from our 402 by the client; the signature does not cover it, so this binds honest clients' payments).
      const signedFor = ctx.payload.resource;
      if (signedFor?.url !== ctx.url || signedFor.description !== ctx.description) {
        throw await refusal(ctx, requirements, 'resource_mismatch', `the payment was signed for ${signedFor ? `${signedFor.description} at ${signedFor.url}` : 'no resource'}, not ${ctx.description} at ${ctx.url}`);
      }
      const s = await server();
      // No match means the payer signed for something else (amount, receiver, asset, network): the
      // facilitator's verify against our terms names which.
      const candidate = s.findMatchingRequirements(requirements, ctx.payload) ?? requirements[0];
      let result;
      try {
        result = await s.verifyPayment(ctx.payload, candidate);
      } catch (err) {
        const e = err as { name?: string; invalidReason?: string; invalidMessage?: string };
        if (e.name === 'VerifyError' && e.invalidReason) throw await refusal(ctx, requirements, e.invalidReason, e.invalidMessage);
        throw unavailable(err);
      }
      if (!result.isValid) throw await refusal(ctx, requirements, result.invalidReason, result.invalidMessage);
      if (!s.findMatchingRequirements(requirements, ctx.payload)) throw await refusal(ctx, requirements, 'no_matching_requirements', 'the payment does not match the price, receiver, asset or network of this call');
      return candidate;
    },

    /** The payment of one call, once verified: what the billing charge describes, and the gate the commit settles and counts. */
    paymentFor(ctx: PaymentContext): { paid: PaidCall; gate: PaymentGate } {
      let bought: Parameters<PaidCall['describe']>[0] | undefined;
      /** This call's settlement once the facilitator confirmed it (`settled`). */
      let settled: SettlementRow | undefined;
      let receipt: SettleResponse | undefined;
      const paid: PaidCall = { priceMicros: ctx.priceMicros, describe: (what) => void (bought = what) };
      const authorization = (ctx.payload.payload as { authorization?: { nonce?: string; validBefore?: string } }).authorization;
      const nonce = authorization?.nonce ?? null;
      // Seconds, as signed; an authorization valid past year 9999 is as good as one that never expires.
      const validBefore = Number(authorization?.validBefore);

      /**
       * The facilitator may have moved the money but did not say so (no answer, `settlement_pending`, a
       * failure naming a transaction, an answer we could not record): the call is not done (503, the
       * key released), the pending row stays for the sweep to resolve on-chain, and an operator is told.
       */
      async function unknownOutcome(pending: SettlementRow, why: string, txHash: string | undefined): Promise<AppError> {
        deps.metrics.x402Settlement('unknown');
        if (txHash) await deps.repo.resolvePending(deps.db, pending.id, { status: 'pending', txHash }).catch(() => undefined);
        const message = `x402 settle for ${ctx.payer} (USD ${formatUsd(ctx.priceMicros)}, nonce ${nonce}${txHash ? `, transaction ${txHash}` : ''}) had no clear outcome (${why}); the call was not done. The settlement sweep resolves it on-chain (a landed transfer is refunded)`;
        await alert(
          { kind: 'x402_settle_unknown', message, customerId: ctx.customerId, resourceType: 'x402_settlement', resourceId: pending.id, data: { payer: ctx.payer, nonce, txHash: txHash ?? null, reason: why.slice(0, 200) } },
          { payer: ctx.payer, nonce, txHash, requestId: ctx.requestId },
        );
        return new AppError(
          'RELAYSTATION_UNAVAILABLE',
          'The payment facilitator did not confirm the settlement: the call was not done. Retry with the same Idempotency-Key and a new payment; if this one landed on-chain it is refunded',
          { retryable: true, ...(txHash ? { transaction: txHash } : {}) },
          { 'Retry-After': '5' },
        );
      }

      const gate: PaymentGate = {
        async settle(): Promise<Record<string, string>> {
          const { requirements } = ctx;
          const s = await server();
          // The intent first, committed on its own: from here a crash at any line leaves a row the sweep resolves.
          const pending = await deps.repo.insertPending(deps.db, {
            customerId: ctx.customerId,
            payer: ctx.payer,
            amountMicros: ctx.priceMicros,
            amount: requirements.amount,
            network: requirements.network,
            asset: config.asset,
            nonce,
            validBefore: Number.isFinite(validBefore) && validBefore <= LAST_SECOND ? new Date(validBefore * 1000) : null,
            requestId: ctx.requestId,
          });
          // The same authorization is being (or was) settled for another call.
          if (!pending) throw await refusal(ctx, [requirements], 'authorization_already_used', 'this payment authorization is already on record; sign a new one');

          let result: SettleResponse;
          try {
            result = await s.settlePayment(ctx.payload, requirements);
          } catch (err) {
            const e = err as { name?: string; errorReason?: string; errorMessage?: string; transaction?: string };
            if (e.name !== 'SettleError') throw await unknownOutcome(pending, String((err as Error)?.message ?? err).slice(0, 200), undefined);
            result = { success: false, errorReason: e.errorReason, errorMessage: e.errorMessage, transaction: e.transaction ?? '', network: requirements.network };
          }
          if (!result.success) {
            // A transaction named, or the facilitator's own "not confirmed yet": the money may have moved.
            if (result.transaction || result.errorReason === 'settlement_pending') throw await unknownOutcome(pending, result.errorReason ?? 'settle failed', result.transaction || undefined);
            deps.metrics.x402Settlement('refused');
            // Nothing moved: the row says so (the authorization may be settled again later).
            await deps.repo.resolvePending(deps.db, pending.id, { status: 'failed' }).catch(() => undefined);
            throw await refusal(ctx, [requirements], result.errorReason, result.errorMessage);
          }

          // The outcome, committed on its own. A transaction already on record paid for another call:
          // this one is refused, and the sweep looks on-chain whether its own authorization moved money.
          try {
            settled = await deps.repo.resolvePending(deps.db, pending.id, { status: 'settled', txHash: result.transaction });
          } catch (err) {
            if (pgErrorCode(err) !== UNIQUE_VIOLATION) throw await unknownOutcome(pending, `settled but not recorded: ${String((err as Error)?.message ?? err).slice(0, 150)}`, result.transaction);
            deps.metrics.x402Settlement('refused');
            await alert(
              {
                kind: 'x402_settle_unknown',
                message: `The facilitator answered the settle of ${ctx.payer}'s payment (nonce ${nonce}) with transaction ${result.transaction}, which already paid another call; the call was refused. The settlement sweep checks on-chain whether this authorization moved money`,
                customerId: ctx.customerId,
                resourceType: 'x402_settlement',
                resourceId: pending.id,
                data: { payer: ctx.payer, nonce, txHash: result.transaction, reason: 'transaction_already_recorded' },
              },
              { payer: ctx.payer, nonce, txHash: result.transaction, requestId: ctx.requestId },
            );
            throw await refusal(ctx, [requirements], 'transaction_already_recorded', `the settlement names transaction ${result.transaction}, which already paid another call`);
          }
          if (!settled) throw await unknownOutcome(pending, 'the settlement was resolved by the sweep meanwhile', result.transaction);
          deps.metrics.x402Settlement('settled');
          receipt = result;
          return { 'PAYMENT-RESPONSE': encodePaymentResponseHeader(result) };
        },

        async commit(tx: Tx): Promise<void> {
          if (!settled || !receipt) throw new Error('x402: commit before settle');
          // The sweep orphaned it (and raised its refund) while the call ran: the call must not commit too.
          if (!(await deps.repo.commit(tx, settled.id, bought?.envelopeId ?? null))) throw new Error(`x402: settlement ${settled.id} was orphaned before its call committed`);
          await deps.billing.recordPayment(tx, {
            customerId: ctx.customerId,
            micros: ctx.priceMicros,
            txHash: receipt.transaction,
            operation: bought?.operation ?? null,
            description: bought?.description ?? `x402 payment: ${ctx.description}`,
            envelopeId: bought?.envelopeId ?? null,
            envelopeTitle: bought?.envelopeTitle ?? null,
          });
        },

        async afterFailedCommit(cause: unknown): Promise<void> {
          if (!settled) return;
          const s = settled;
          try {
            await deps.db.transaction(async (tx) => {
              const row = await deps.repo.orphan(tx, s.id);
              if (row) await deps.refunds.walletRefund(tx, row, `the paid call did not commit: ${String((cause as Error)?.message ?? cause).slice(0, 200)}`);
            });
          } catch {
            // The database is what failed: the row stays `settled` for the stale-settlement sweep, and the log says why.
            deps.log.error({ txHash: s.txHash, payer: ctx.payer, requestId: ctx.requestId }, `x402 payment ${s.txHash} by ${ctx.payer} (USD ${formatUsd(ctx.priceMicros)}) settled but its call did not commit: refund it`);
          }
        },
      };
      return { paid, gate };
    },
  };
}

export type X402Service = ReturnType<typeof createX402Service>;
