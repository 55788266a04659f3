/** GET /dashboard/webhooks: each registration with its state and its last deliveries. */
import { escapeHtml, scrollTable, when } from './layout.js';
import { badge, emptyState, pageHeader, query, shortWhen, type Mode } from './parts.js';

export type WebhookItem = {
  id: string;
  url: string;
  events: string[];
  description: string | null;
  active: boolean;
  consecutiveFailures: number;
  disabledReason: string | null;
  createdAt: string;
  deliveries: { id: string; event: string; envelopeId: string | null; status: string; responseCode: number | null; attempts: number; errorMessage: string | null; lastAttemptAt: string | null; nextRetryAt: string | null; createdAt: string }[];
  totalDeliveries: number;
};

/** A pending delivery that was tried already is being retried: say so, and when the next try is. */
function deliveryStatus(d: WebhookItem['deliveries'][number]): string {
  if (d.status !== 'PENDING' || d.attempts === 0) return badge(d.status);
  return `${badge('RETRYING', 'wait')}${d.nextRetryAt ? ` <small class="muted">next ${shortWhen(d.nextRetryAt)}</small>` : ''}`;
}

function registration(w: WebhookItem, i: number, mode: Mode): string {
  const state = w.active ? badge('active', 'good') : badge('disabled', 'bad');
  const deliveries = w.deliveries.length
    ? scrollTable(
        ['Event', 'Status', 'Response', 'Attempts', 'Last try (UTC)'],
        w.deliveries.map((d) => [
          d.envelopeId ? `<a href="/dashboard/envelopes/${escapeHtml(d.envelopeId)}${query({ mode })}"><code>${escapeHtml(d.event)}</code></a>` : `<code>${escapeHtml(d.event)}</code>`,
          deliveryStatus(d),
          d.responseCode !== null ? `<code>${d.responseCode}</code>` : d.errorMessage ? `<small>${escapeHtml(d.errorMessage.slice(0, 80))}</small>` : '<span class="muted">—</span>',
          String(d.attempts),
          shortWhen(d.lastAttemptAt ?? d.createdAt),
        ]),
        `Last ${w.deliveries.length} of ${w.totalDeliveries} deliveries`,
      )
    : '<p class="muted">No deliveries yet: one is made for each subscribed event of your envelopes.</p>';
  return `<article class="webhook" aria-labelledby="wh-${i}">
<header><h2 id="wh-${i}" class="url">${escapeHtml(w.url)}</h2><p>${state}${w.consecutiveFailures ? ` <span class="badge bad">${w.consecutiveFailures} failed in a row</span>` : ''}</p></header>
${w.description ? `<p>${escapeHtml(w.description)}</p>` : ''}
<dl class="facts">
<div><dt>Events</dt><dd>${w.events.map((e) => `<code>${escapeHtml(e)}</code>`).join(' ')}</dd></div>
<div><dt>Created</dt><dd>${when(w.createdAt)}</dd></div>
<div><dt>Id</dt><dd><code class="id">wh_${escapeHtml(w.id)}</code></dd></div>
${w.disabledReason ? `<div><dt>Disabled because</dt><dd>${escapeHtml(w.disabledReason)}</dd></div>` : ''}
</dl>
<h3>Recent deliveries</h3>
${deliveries}
</article>`;
}

export function webhooksPage(v: { mode: Mode; publicUrl: string; webhooks: WebhookItem[]; testFallback?: boolean }): string {
  const curl = `curl ${v.publicUrl}/v1/webhooks \\
  -H "Authorization: Bearer ${v.mode === 'test' ? 'svc_test_' : 'svc_live_'}…" \\
  -H "Content-Type: application/json" \\
  -d '{"url":"https://example.com/hooks/signet","events":["envelope.completed"]}'`;
  const body = v.webhooks.length
    ? v.webhooks.map((w, i) => registration(w, i, v.mode)).join('\n')
    : emptyState(`No ${v.mode === 'test' ? 'test ' : ''}webhook endpoints`, `<p>Register one with the API; every delivery and its response shows up here.</p><pre><code>${escapeHtml(curl)}</code></pre>`);
  return `${pageHeader({ title: 'Webhooks', lead: 'Endpoints that hear about your envelopes, and what they answered.', path: '/dashboard/webhooks', mode: v.mode, fallback: v.testFallback ? 'webhook endpoints' : undefined })}
${body}`;
}
