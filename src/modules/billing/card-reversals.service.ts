import type Stripe from 'stripe';
import type { OperatorContext } from '../../context.js';
import type { Tx } from '../../db/client.js';
import { centsToMicros, formatDollars, microsToCents } from '../../lib/money.js';
import type { ChargeSnapshot, DisputeSnapshot } from '../../providers/payments/card-checkout.js';
import type { AuditService } from '../audit/audit.service.js';
import type { BillingService } from './billing.service.js';
import type { CardReversalsRepo } from './card-reversals.repo.js';
import type { TopUpRow, TopUpsRepo } from './top-ups.repo.js';

/** Stripe's events about money taken back from a card payment; one handler reads them all. */
export const REVERSAL_EVENTS = [
  'charge.refunded',
  'charge.dispute.created',
  'charge.dispute.updated',
  'charge.dispute.funds_withdrawn',
  'charge.dispute.funds_reinstated',
  'charge.dispute.closed',
] as const;

/**
 * A dispute that ended in our favour: the card network sided with us (won), an inquiry closed without
 * becoming a chargeback (warning_closed), or it was prevented. Final, and it holds nothing back. Any
 * other status holds the disputed amount: open disputes and inquiries too (the customer could spend the
 * credit meanwhile), and lost ones (an appeal may still win).
 */
const ENDED_FOR_US = new Set<string>(['won', 'warning_closed', 'prevented']);

type Claim = {
  kind: 'refund' | 'dispute';
  /** The refunded charge, or the dispute. */
  stripeObjectId: string;
  paymentIntent: string | null;
  /** What Stripe holds back for this object now (a refund: all refunded so far). */
  micros: bigint;
  currency: string;
  stripeStatus: string | null;
  eventType: string;
};

const idOf = (ref: string | { id: string } | null) => (typeof ref === 'string' ? ref : (ref?.id ?? null));
const min = (a: bigint, b: bigint) => (a < b ? a : b);

/**
 * Card refunds and disputes take a top-up's credit back. Every event, in the transaction that records
 * its id, sets what Stripe holds back for its charge or dispute; the top-up's balance reversal then
 * follows the sum of those claims (at most the top-up's amount): the difference is taken from the
 * balance, never below zero (the rest is alerted to the operator as unrecovered), or given back when a
 * dispute ends in our favour. A redelivered event, or another event about the same state, moves nothing.
 */
export function createCardReversalsService(deps: {
  repo: CardReversalsRepo;
  topUps: Pick<TopUpsRepo, 'lockByPaymentIntent' | 'setReversal'>;
  billing: Pick<BillingService, 'takeBack' | 'credit'>;
  audit: AuditService;
  now: () => Date;
}) {
  const { repo, audit } = deps;

  async function apply(tx: Tx, claim: Claim, op: OperatorContext): Promise<void> {
    const data = { kind: claim.kind, stripeObjectId: claim.stripeObjectId, paymentIntent: claim.paymentIntent, eventType: claim.eventType, status: claim.stripeStatus, claimedCents: microsToCents(claim.micros), currency: claim.currency };
    const alert = (kind: string, message: string, topUp?: TopUpRow, extra: Record<string, unknown> = {}) =>
      audit.alert(tx, { kind, message, customerId: topUp?.customerId ?? null, resourceType: 'card_top_up', resourceId: topUp?.id ?? null, data: { ...data, ...extra } });

    // Locked: events about one payment (a refund and a dispute, say) apply one after the other.
    const topUp = claim.paymentIntent ? await deps.topUps.lockByPaymentIntent(tx, claim.paymentIntent) : undefined;
    if (!topUp) {
      // A payment of something else on the same Stripe account, or a top-up paid before Signet kept its PaymentIntent.
      if (claim.micros > 0n) await alert('card_reversal_unknown_payment', `Stripe took back ${formatDollars(claim.micros)} of payment ${claim.paymentIntent ?? '(none named)'} (${claim.eventType}), which no paid top-up has: nothing was taken from a balance`);
      return;
    }
    if (claim.currency !== 'usd') {
      if (claim.micros > 0n) await alert('card_reversal_currency_mismatch', `${claim.eventType} for top-up ${topUp.id} is in ${claim.currency}, not usd: nothing was taken from the balance`, topUp);
      return;
    }

    const row = await repo.findOrCreate(tx, { topUpId: topUp.id, customerId: topUp.customerId, kind: claim.kind, stripeObjectId: claim.stripeObjectId });
    if (row.stripeStatus !== null && ENDED_FOR_US.has(row.stripeStatus)) return; // final: a late event changes nothing
    // A charge's refunded amount only grows: an older event delivered late changes nothing.
    const claimed = claim.kind === 'refund' && row.claimedMicros > claim.micros ? row.claimedMicros : claim.micros;
    await repo.setClaim(tx, row.id, { claimedMicros: claimed, stripeStatus: claim.stripeStatus, updatedAt: deps.now() });

    // A refund and a dispute of one charge can overlap (an inquiry answered by a refund): never more than the top-up.
    const target = min(await repo.claimedOf(tx, topUp.id), topUp.amountMicros);
    let reversed = topUp.reversedMicros;
    let unrecovered = topUp.unrecoveredMicros;
    const accounted = reversed + unrecovered;
    if (target > accounted) {
      const owed = target - accounted;
      const description = claim.kind === 'refund' ? 'Card top-up refunded' : 'Card top-up disputed';
      const { takenMicros, ledgerEntryId } = await deps.billing.takeBack(tx, { customerId: topUp.customerId, micros: owed, description });
      reversed += takenMicros;
      unrecovered += owed - takenMicros;
      const amounts = { owedCents: microsToCents(owed), takenCents: microsToCents(takenMicros), ledgerEntryId };
      await audit.operator(tx, op, { customerId: topUp.customerId, action: 'credits.reverse', resourceType: 'card_top_up', resourceId: topUp.id, metadata: { ...data, ...amounts } });
      if (takenMicros < owed) {
        await alert(
          'card_reversal_unrecovered',
          `${claim.eventType}: ${formatDollars(owed)} of top-up ${topUp.id} should come back, but the balance held ${formatDollars(takenMicros)}; ${formatDollars(owed - takenMicros)} is not recovered`,
          topUp,
          amounts,
        );
      }
    } else if (target < accounted) {
      // A dispute ended in our favour: what could not be taken is forgotten first, then the rest given back.
      const release = accounted - target;
      const forgiven = min(release, unrecovered);
      const restored = release - forgiven;
      unrecovered -= forgiven;
      reversed -= restored;
      const entry = restored > 0n ? (await deps.billing.credit(tx, { customerId: topUp.customerId, micros: restored, direction: 'credit', description: 'Card dispute ended in your favour: top-up restored' })).entry : undefined;
      await audit.operator(tx, op, {
        customerId: topUp.customerId,
        action: 'credits.restore',
        resourceType: 'card_top_up',
        resourceId: topUp.id,
        metadata: { ...data, restoredCents: microsToCents(restored), forgivenCents: microsToCents(forgiven), ledgerEntryId: entry?.id ?? null },
      });
    }
    if (reversed !== topUp.reversedMicros || unrecovered !== topUp.unrecoveredMicros) await deps.topUps.setReversal(tx, topUp.id, { reversedMicros: reversed, unrecoveredMicros: unrecovered });
  }

  return {
    /** The StripeEventHandler of REVERSAL_EVENTS. */
    async applyEvent(tx: Tx, event: Stripe.Event, op: OperatorContext): Promise<void> {
      if (event.type === 'charge.refunded') {
        const charge = event.data.object as ChargeSnapshot;
        const claim = { kind: 'refund', stripeObjectId: charge.id, micros: centsToMicros(charge.amount_refunded), stripeStatus: null } as const;
        return apply(tx, { ...claim, paymentIntent: idOf(charge.payment_intent), currency: charge.currency, eventType: event.type }, op);
      }
      const dispute = event.data.object as DisputeSnapshot;
      const micros = ENDED_FOR_US.has(dispute.status) ? 0n : centsToMicros(dispute.amount);
      return apply(tx, { kind: 'dispute', stripeObjectId: dispute.id, paymentIntent: idOf(dispute.payment_intent), micros, currency: dispute.currency, stripeStatus: dispute.status, eventType: event.type }, op);
    },
  };
}

export type CardReversalsService = ReturnType<typeof createCardReversalsService>;
