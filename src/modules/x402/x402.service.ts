import { encodePaymentRequiredHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { HTTPAdapter } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import type { PaidCall } from '../../context.js';
import type { X402Config } from '../../config.js';
import type { Db, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { formatUsd } from '../../lib/money.js';
import { PRICES, type BillableOperation } from '../../lib/prices.js';
import type { X402Facilitator } from '../../providers/payments/x402-facilitator.js';
import type { AuditService } from '../audit/audit.service.js';
import type { RefundsService } from '../billing/refunds.service.js';
import type { BillingService } from '../billing/billing.service.js';
import type { Metrics } from '../ops/metrics.js';
import type { X402Repo } from './x402.repo.js';

/** How long a signed authorization may take to reach us and settle. */
const MAX_TIMEOUT_SECONDS = 300;

type Deps = {
  db: Db;
  config: X402Config;
  facilitator: X402Facilitator;
  repo: X402Repo;
  billing: Pick<BillingService, 'recordPayment' | 'balanceOf'>;
  refunds: Pick<RefundsService, 'walletRefund'>;
  audit: Pick<AuditService, 'alert'>;
  topUpUrl: string;
  /** Where a settlement that could not even be recorded is written down. */
  log: { error(obj: object, msg: string): void };
  /**
   * The database can run a second transaction while the paid call's is open (PostgreSQL, not PGlite's
   * single connection): the settlement is then committed on its own the moment it is confirmed.
   */
  recordsSettlementApart: boolean;
  metrics: Pick<Metrics, 'x402Settlement'>;
};

/** What a paid call is: its price and where it lives (the resource the payer signs for). */
export type PaidResource = { priceMicros: bigint; url: string; description: string; adapter: HTTPAdapter };

export type PaymentContext = PaidResource & { payload: PaymentPayload; customerId: string; payer: string; requestId: string };

/**
 * x402 v2 around one paid call, in the order the atomicity needs: verify before the work, settle inside
 * the work's transaction just before it commits, the settlement recorded in its own row as soon as the
 * facilitator confirms it. @x402/core speaks the protocol; this maps its outcomes to SPEC.md's errors.
 */
/** A paid call's transaction that has not committed this long after its settle has died with its process. */
const STALE_SETTLEMENT_MS = 10 * 60_000;

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
  async function refusal(ctx: PaymentContext, requirements: PaymentRequirements[], reason: string | undefined, message: string | undefined, tx?: Tx): Promise<AppError> {
    const why = reason ?? 'payment_invalid';
    const headers = await paymentRequiredHeader(ctx, requirements, why).catch(() => ({}) as Record<string, string>);
    if (/signature/.test(why) && !/parse/.test(why)) {
      return new AppError('INVALID_SIGNATURE', 'The payment authorization was not signed by the address it claims to come from', { reason: why }, headers);
    }
    if (/insufficient/.test(why)) {
      // Inside the paid call's transaction when the settle refused (PGlite has one connection).
      const balance = await deps.billing.balanceOf(ctx.customerId, tx);
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

  return {
    /** Periodic: settlements whose call's process died between settle and commit are refunds due. */
    async orphanStaleSettlements(tx: Tx, olderThanMs = STALE_SETTLEMENT_MS): Promise<number> {
      const rows = await deps.repo.orphanStale(tx, olderThanMs);
      for (const row of rows) await deps.refunds.walletRefund(tx, row, 'the paid call never committed (its process stopped after the payment settled)');
      return rows.length;
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

    /** The payment of one call: what the billing charge describes, and what commitMutation verifies and settles. */
    paymentFor(ctx: PaymentContext) {
      let bought: Parameters<PaidCall['describe']>[0] | undefined;
      let matched: PaymentRequirements | undefined;
      let settlement: (SettleResponse & { amount: string }) | undefined;
      /** The facilitator did not answer the settle: it may have broadcast the transfer all the same. */
      let settleUnknown: unknown;
      const paid: PaidCall = { priceMicros: ctx.priceMicros, describe: (what) => void (bought = what) };

      const rowOf = (s: SettleResponse & { amount: string }) => ({
          customerId: ctx.customerId,
          payer: ctx.payer,
          amountMicros: ctx.priceMicros,
          amount: s.amount,
          network: s.network,
          asset: config.asset,
          txHash: s.transaction,
          envelopeId: bought?.envelopeId ?? null,
          requestId: ctx.requestId,
        });

      /** A settle that timed out or failed in transport: the operator checks the chain for this authorization. */
      const alertUnknownSettle = async (err: unknown) => {
        const nonce = (ctx.payload.payload as { authorization?: { nonce?: string } }).authorization?.nonce;
        const message = `x402 settle for ${ctx.payer} (USD ${formatUsd(ctx.priceMicros)}, nonce ${nonce}) had no answer; the call was rolled back. If the transfer landed on-chain, refund it`;
        try {
          await deps.db.transaction((tx) =>
            deps.audit.alert(tx, { kind: 'x402_settle_unknown', message, customerId: ctx.customerId, resourceType: 'x402_authorization', resourceId: nonce ?? null, data: { payer: ctx.payer, error: String((err as Error)?.message ?? err).slice(0, 200) } }),
          );
        } catch {
          deps.log.error({ payer: ctx.payer, nonce, requestId: ctx.requestId }, message);
        }
      };

      const gate = {
        async verify(): Promise<void> {
          const requirements = await requirementsFor(ctx);
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
          matched = candidate;
        },

        async settle(tx: Tx): Promise<Record<string, string>> {
          if (!matched) throw new Error('x402: settle before verify');
          const s = await server();
          let result: SettleResponse;
          try {
            result = await s.settlePayment(ctx.payload, matched);
          } catch (err) {
            const e = err as { name?: string; errorReason?: string; errorMessage?: string };
            deps.metrics.x402Settlement(e.name === 'SettleError' ? 'refused' : 'unknown');
            if (e.name === 'SettleError') throw await refusal(ctx, [matched], e.errorReason, e.errorMessage, tx);
            settleUnknown = err;
            throw unavailable(err);
          }
          deps.metrics.x402Settlement(result.success ? 'settled' : 'refused');
          if (!result.success) throw await refusal(ctx, [matched], result.errorReason, result.errorMessage, tx);
          settlement = { ...result, amount: result.amount ?? matched.amount };
          // The on-chain fact first, then the ledger row that counts it in the wallet's history. Where a
          // second connection exists, the fact commits at once on its own: a crash before the call's
          // commit leaves a `settled` row that the stale-settlement sweep turns into a refund.
          if (deps.recordsSettlementApart) {
            await deps.repo.insertSettlement(deps.db, { ...rowOf(settlement), status: 'settled' });
            await deps.repo.markCommitted(tx, settlement.transaction);
          } else await deps.repo.insertSettlement(tx, { ...rowOf(settlement), status: 'committed' });
          await deps.billing.recordPayment(tx, {
            customerId: ctx.customerId,
            micros: ctx.priceMicros,
            txHash: result.transaction,
            operation: bought?.operation ?? null,
            description: bought?.description ?? `x402 payment: ${ctx.description}`,
            envelopeId: bought?.envelopeId ?? null,
            envelopeTitle: bought?.envelopeTitle ?? null,
          });
          return { 'PAYMENT-RESPONSE': encodePaymentResponseHeader(result) };
        },

        async afterFailedCommit(cause: unknown): Promise<void> {
          if (!settlement) {
            if (settleUnknown !== undefined) await alertUnknownSettle(settleUnknown);
            return;
          }
          const s = settlement;
          const message = `x402 payment ${s.transaction} by ${ctx.payer} (USD ${formatUsd(ctx.priceMicros)}) settled but its call did not commit: refund it`;
          try {
            await deps.db.transaction(async (tx) => {
              const row = await deps.repo.orphan(tx, rowOf(s));
              if (row) await deps.refunds.walletRefund(tx, row, `the paid call did not commit: ${String((cause as Error)?.message ?? cause).slice(0, 200)}`);
            });
          } catch {
            // The database is what failed: the log line is the record left.
            deps.log.error({ txHash: s.transaction, payer: ctx.payer, requestId: ctx.requestId }, message);
          }
        },
      };
      return { paid, gate };
    },
  };
}

export type X402Service = ReturnType<typeof createX402Service>;
