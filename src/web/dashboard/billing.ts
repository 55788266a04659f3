/**
 * The billing page: balance and sandbox allowance, the card top-up form (or, without a card provider,
 * how an operator credits the balance), recent top-ups, and the usage history (the ledger) with paging.
 * Every value is escaped here; the notices are fixed texts chosen by the route, never request input.
 */
import { formatDollars } from '../../lib/money.js';
import { csrfField, escapeHtml, scrollTable, when } from './layout.js';

export type BillingTopUp = { amountMicros: bigint; status: 'pending' | 'paid' | 'expired'; createdAt: Date; paidAt: Date | null };

export type BillingUsageEntry = {
  direction: 'debit' | 'credit' | 'refund' | 'reversal';
  amountMicros: number;
  description: string;
  envelopeId: string | null;
  envelopeTitle: string | null;
  createdAt: string;
};

export type BillingView = {
  csrf: string;
  customerId: string;
  balanceMicros: bigint;
  sandboxUsed: number;
  sandboxLimit: number;
  /** Undefined when no card provider is configured. */
  cardTopUp: { presetsUsd: readonly number[]; defaultUsd: number; minUsd: number; maxUsd: number } | undefined;
  topUps: BillingTopUp[];
  usage: { rows: BillingUsageEntry[]; total: number; limit: number; offset: number };
};

const STATUS: Record<BillingTopUp['status'], { label: string; tone: string }> = {
  paid: { label: 'Paid', tone: 'good' },
  pending: { label: 'Waiting for payment', tone: 'wait' },
  expired: { label: 'Not completed', tone: 'bad' },
};

const usd = (n: number) => `$${n.toLocaleString('en-US')}`;

/** A long title or description would stretch the table (cells do not wrap); the full text is the tooltip. */
const clip = (s: string, max = 40) => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/**
 * scrollTable whose scrolling box can take the keyboard focus, so a keyboard user can scroll a table
 * wider than a phone (axe: scrollable-region-focusable). To go once scrollTable does this itself.
 */
const table = (head: string[], rows: string[][], caption: string): string =>
  scrollTable(head, rows, caption).replace('<div class="overflow-auto">', `<div class="overflow-auto" tabindex="0" role="region" aria-label="${escapeHtml(caption)}">`);

function topUpForm(v: BillingView, form: NonNullable<BillingView['cardTopUp']>): string {
  const presets = form.presetsUsd
    .map(
      (a) =>
        `<label><input type="radio" name="amount" value="${a}"${a === form.defaultUsd ? ' checked' : ''}> ${usd(a)}</label>`,
    )
    .join('');
  return `<form method="post" action="/dashboard/billing/top-up" class="top-up">
${csrfField(v.csrf)}
<fieldset>
<legend>Amount</legend>
<div class="grid">${presets}</div>
</fieldset>
<label for="custom-amount">Or another amount in whole US dollars
<input type="number" id="custom-amount" name="customAmount" min="${form.minUsd}" max="${form.maxUsd}" step="1" inputmode="numeric" aria-describedby="custom-amount-help">
</label>
<small id="custom-amount-help">From ${usd(form.minUsd)} to ${usd(form.maxUsd)}. When you enter an amount here it is used instead of the one chosen above.</small>
<button type="submit">Continue to payment</button>
<p><small>You pay on Stripe's secure page. Your balance grows as soon as Stripe confirms the payment.</small></p>
</form>`;
}

function operatorCredit(v: BillingView): string {
  const id = escapeHtml(v.customerId);
  return `<p>Card payments are not set up on this server. An operator can credit your balance; they need your account id:</p>
<p><code id="account-id" class="secret">${id}</code> <button type="button" class="secondary outline" data-copy="account-id">Copy</button></p>
<details>
<summary>How an operator credits a balance</summary>
<p>With the command line, on the server (amounts in cents):</p>
<pre><code>npx signet ops credits add ${id} --amount-cents 2500 --reason "Invoice 1042"</code></pre>
<p>Or with the operator API and the operator token:</p>
<pre><code>POST /ops/customers/${id}/credits
{"amountCents": 2500, "reason": "Invoice 1042"}</code></pre>
<p>To take card payments on this page, set <code>STRIPE_SECRET_KEY</code> and <code>STRIPE_WEBHOOK_SECRET</code> and enable the Checkout events on Stripe's webhook.</p>
</details>`;
}

function topUpList(v: BillingView): string {
  if (v.topUps.length === 0) return '<p>No card top-ups yet.</p>';
  return table(
    ['Started', 'Amount', 'Status', 'Paid'],
    v.topUps.map((t) => [
      when(t.createdAt),
      escapeHtml(formatDollars(t.amountMicros)),
      `<span class="badge ${STATUS[t.status].tone}">${STATUS[t.status].label}</span>`,
      when(t.paidAt),
    ]),
    'Recent card top-ups',
  );
}

function pageLink(label: string, limit: number, offset: number, rel: string): string {
  return `<a href="/dashboard/billing?limit=${limit}&amp;offset=${offset}#usage" rel="${rel}">${label}</a>`;
}

function usageHistory(v: BillingView): string {
  const { rows, total, limit, offset } = v.usage;
  if (total === 0) return '<p>No charges or credits yet. Every charge, credit and refund of your balance appears here.</p>';
  // Amount right after the date: on a phone the table scrolls, and those two are what people look for.
  const history = table(
    ['Date', 'Amount', 'Description', 'Envelope'],
    rows.map((r) => {
      const out = r.direction === 'debit' || r.direction === 'reversal';
      const amount = `<span class="badge ${out ? 'muted' : 'good'}">${out ? '−' : '+'}${escapeHtml(formatDollars(BigInt(r.amountMicros)))}</span>`;
      const envelope = r.envelopeId
        ? `<a href="/dashboard/envelopes/${escapeHtml(r.envelopeId)}" title="${escapeHtml(r.envelopeTitle ?? r.envelopeId)}">${escapeHtml(clip(r.envelopeTitle ?? `${r.envelopeId.slice(0, 8)}…`))}</a>`
        : '—';
      const description = `<span title="${escapeHtml(r.description)}">${escapeHtml(clip(r.description, 60))}</span>`;
      return [when(r.createdAt), amount, description, envelope];
    }),
    'Usage history, newest first',
  );
  const first = rows.length ? offset + 1 : 0;
  const last = offset + rows.length;
  // A missing direction is plain text, not a dead link (as on the other dashboard lists).
  const prev = offset > 0 ? pageLink('← Previous', limit, Math.max(0, offset - limit), 'prev') : '<span aria-disabled="true">← Previous</span>';
  const next = last < total ? pageLink('Next →', limit, last, 'next') : '<span aria-disabled="true">Next →</span>';
  return `${history}
<nav class="pager" aria-label="Usage history pages"><ul><li>${prev}</li></ul><p>${first}–${last} of ${total}</p><ul><li>${next}</li></ul></nav>`;
}

export function renderBillingBody(v: BillingView): string {
  return `<hgroup><h1>Billing</h1><p>Your prepaid balance pays for live API calls; test-mode calls use the free sandbox allowance.</p></hgroup>
<section class="stats" aria-label="Balance and allowance">
<article><small>Balance</small><span class="value">${escapeHtml(formatDollars(v.balanceMicros))}</span></article>
<article><small>Sandbox (test-mode sends)</small><span class="value">${v.sandboxUsed} / ${v.sandboxLimit}</span></article>
</section>
<article aria-labelledby="top-up-title">
<h2 id="top-up-title">Top up by card</h2>
${v.cardTopUp ? topUpForm(v, v.cardTopUp) : operatorCredit(v)}
</article>
<section aria-labelledby="top-ups-title">
<h2 id="top-ups-title">Card top-ups</h2>
${topUpList(v)}
</section>
<section aria-labelledby="usage" id="usage-section">
<h2 id="usage">Usage history</h2>
${usageHistory(v)}
</section>`;
}
