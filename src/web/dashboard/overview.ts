/** GET /dashboard: the balance, test sends, the spending chart, recent envelopes, and first steps for a new account. */
import { dollars, spendingChart, type DaySpend } from './chart.js';
import { escapeHtml, scrollTable } from './layout.js';
import { firstCallBox } from './first-call.js';
import { badge, pageHeader, query, shortWhen, type Mode } from './parts.js';

export type EnvelopeListItem = { envelopeId: string; title: string | null; status: string; recipients: unknown[]; createdAt: string };

export type OverviewView = {
  mode: Mode;
  publicUrl: string;
  account: { name: string; creditsFormatted: string; sandboxUsed: number; sandboxLimit: number; displayNameIsDefault: boolean };
  spending: DaySpend[];
  recent: EnvelopeListItem[];
  /** No active API key: the page leads with how to start. */
  needsKey: boolean;
  /** Nothing sent yet, live or test: the page leads with the first call. */
  neverSent: boolean;
  /** No ?mode asked and nothing live yet: the recent list shows test envelopes, and says so. */
  testFallback: boolean;
};

export const envelopeLink = (e: { envelopeId: string; title: string | null }, mode: Mode): string =>
  `<a class="wrap" href="/dashboard/envelopes/${escapeHtml(e.envelopeId)}${query({ mode })}">${e.title ? escapeHtml(e.title) : '<em>Untitled envelope</em>'}</a>`;

export const ENVELOPE_COLUMNS = ['Envelope', 'Status', 'Recipients', 'Created (UTC)'];

export const envelopeRows = (list: EnvelopeListItem[], mode: Mode): string[][] =>
  list.map((e) => [envelopeLink(e, mode), badge(e.status), String(e.recipients.length), shortWhen(e.createdAt)]);

function firstSteps(v: OverviewView): string {
  return `<article class="first-steps" aria-labelledby="first-steps-title">
<header><h2 id="first-steps-title">Get started in three steps</h2></header>
<ol>
<li><strong><a href="/dashboard/keys">Create a test API key.</a></strong> A test key (<code>svc_test_</code>) sends free test envelopes whose mail never leaves the server; a live key is charged from your balance.</li>
<li><strong>Send your first envelope.</strong> This fetches a sample NDA whose <code>{{signature, r1}}</code> and <code>{{signature, r2}}</code> markers become the two recipients' signature fields, and sends it:
${firstCallBox(v.publicUrl)}</li>
<li><strong><a href="/dashboard/webhooks">Listen for events</a></strong> with a webhook, or poll <code>GET /v1/envelopes/{id}/status</code>. <a href="/docs">API reference</a></li>
</ol>
${v.needsKey ? '<footer><a role="button" href="/dashboard/keys">Create your first API key</a></footer>' : ''}
</article>`;
}

/** While the account keeps its sign-up name (an email's local part), invitations would read "alex asks you to sign". */
const namePrompt = (v: OverviewView): string =>
  `<article class="name-prompt" aria-labelledby="name-prompt-title">
<header><h2 id="name-prompt-title">Set your name as recipients will see it</h2></header>
<p>Your invitations now say “${escapeHtml(v.account.name)} asks you to sign”. <a href="/dashboard/settings">Set your name in settings</a> so recipients know who is asking.</p>
</article>`;

export function overviewPage(v: OverviewView): string {
  const spent = v.spending.reduce((a, d) => a + (d.micros > 0n ? d.micros : 0n), 0n);
  const left = Math.max(0, v.account.sandboxLimit - v.account.sandboxUsed);
  const stats = `<section class="stats" aria-label="Account at a glance">
<article><small>Balance</small><span class="value">${escapeHtml(v.account.creditsFormatted)}</span><a href="/dashboard/billing">Top up</a></article>
<article><small>Free test sends</small><span class="value">${v.account.sandboxUsed} <small>of ${v.account.sandboxLimit}</small></span><progress value="${Math.min(v.account.sandboxUsed, v.account.sandboxLimit)}" max="${Math.max(v.account.sandboxLimit, 1)}" aria-label="Free test sends used"></progress><small>${left} left</small></article>
<article><small>Spent, last 30 days</small><span class="value">${escapeHtml(dollars(spent))}</span><a href="/dashboard/billing">Usage history</a></article>
</section>`;
  const recent = v.recent.length
    ? scrollTable(ENVELOPE_COLUMNS, envelopeRows(v.recent, v.mode))
    : `<p class="muted">No ${v.mode === 'test' ? 'test ' : ''}envelopes yet.${v.needsKey ? ' Create an API key, then send one with <code>POST /v1/envelopes</code>.' : ' Send one with <code>POST /v1/envelopes</code>.'}</p>`;
  return `${pageHeader({ title: 'Overview', lead: v.account.name, path: '/dashboard', mode: v.mode, fallback: v.testFallback ? 'envelopes' : undefined })}
${v.account.displayNameIsDefault ? namePrompt(v) : ''}
${v.needsKey || v.neverSent ? firstSteps(v) : ''}
${stats}
<article aria-labelledby="spending-heading"><header><h2 id="spending-heading">Spending</h2></header>${spendingChart(v.spending)}</article>
<article aria-labelledby="recent-heading"><header class="split"><h2 id="recent-heading">Recent envelopes</h2><a href="/dashboard/envelopes${query({ mode: v.mode })}">All envelopes →</a></header>${recent}</article>`;
}
