/** GET /dashboard/webhooks: each registration with its state and its last deliveries, and the forms that act on them. */
import { csrfField, escapeHtml, scrollTable, when } from './layout.js';
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
  deliveries: { id: string; event: string; envelopeId: string | null; status: string; responseCode: number | null; attempts: number; errorMessage: string | null; lastAttemptAt: string | null; nextRetryAt: string | null; redeliveryOf?: string | null; createdAt: string }[];
  totalDeliveries: number;
};

export type WebhooksView = {
  mode: Mode;
  publicUrl: string;
  webhooks: WebhookItem[];
  testFallback?: boolean;
  /** Registrations on each side, for the switch. */
  counts?: Record<Mode, number>;
  csrf?: string;
  /** The event names an endpoint can subscribe to. */
  events?: readonly string[];
  /** Right after a create: the secret, this once. */
  created?: { url: string; secret: string };
};

/** A pending delivery that was tried already is being retried: say so, and when the next try is. */
function deliveryStatus(d: WebhookItem['deliveries'][number]): string {
  if (d.status !== 'PENDING' || d.attempts === 0) return badge(d.status);
  return `${badge('RETRYING', 'wait')}${d.nextRetryAt ? ` <small class="muted">next ${shortWhen(d.nextRetryAt)}</small>` : ''}`;
}

const hidden = (v: WebhooksView) => `${csrfField(v.csrf ?? '')}<input type="hidden" name="mode" value="${v.mode}">`;

/** The event checkboxes; names are `event:<name>` so that each survives the form body on its own. */
function eventChoices(v: WebhooksView, prefix: string, chosen: string[]): string {
  const all = chosen.includes('*');
  const box = (name: string, label: string, checked: boolean) =>
    `<label><input type="checkbox" name="event:${escapeHtml(name)}"${checked ? ' checked' : ''}> ${label}</label>`;
  return `<fieldset class="events"><legend>Events</legend>
${box('*', 'All events, including ones added later', all)}
${(v.events ?? []).map((e) => box(e, `<code>${escapeHtml(e)}</code>`, !all && chosen.includes(e))).join('\n')}
<small id="${prefix}-events-help" class="muted">Choose all events, or the ones you handle.</small>
</fieldset>`;
}

function endpointFields(v: WebhooksView, prefix: string, w?: WebhookItem): string {
  return `<label for="${prefix}-url">Endpoint URL</label>
<input id="${prefix}-url" name="url" type="url" required maxlength="2048" placeholder="https://example.com/hooks/signet" value="${escapeHtml(w?.url ?? '')}">
<label for="${prefix}-description">Description <small class="muted">(optional)</small></label>
<input id="${prefix}-description" name="description" maxlength="500" value="${escapeHtml(w?.description ?? '')}">
${eventChoices(v, prefix, w?.events ?? [])}`;
}

function createForm(v: WebhooksView): string {
  return `<details class="webhook-form"${v.webhooks.length ? '' : ' open'}><summary>Add an endpoint</summary>
<form method="post" action="/dashboard/webhooks">
${hidden(v)}
${endpointFields(v, 'new')}
<button type="submit">Add endpoint</button>
</form>
</details>`;
}

function createdBox(c: NonNullable<WebhooksView['created']>): string {
  return `<article class="new-key" aria-labelledby="new-secret-title">
<header><h2 id="new-secret-title">Endpoint added</h2></header>
<p class="warning"><strong>Copy the signing secret now.</strong> It is shown this once; every delivery to <code>${escapeHtml(c.url)}</code> is signed with it.</p>
<div class="key-row"><code id="new-secret" class="secret">${escapeHtml(c.secret)}</code><button type="button" class="copy" data-copy="new-secret">Copy</button><span class="copy-status" role="status" aria-live="polite"></span></div>
</article>`;
}

function actions(v: WebhooksView, w: WebhookItem, i: number): string {
  const base = `/dashboard/webhooks/${escapeHtml(w.id)}`;
  const test = w.active
    ? `<form method="post" action="${base}/test" class="inline">${hidden(v)}<button type="submit" class="secondary">Send test event</button></form>`
    : '';
  return `<div class="webhook-actions">
${test}
<details class="webhook-form"><summary>Edit</summary>
<form method="post" action="${base}">
${hidden(v)}
${endpointFields(v, `wh-${i}`, w)}
<label><input type="checkbox" role="switch" name="active" aria-describedby="wh-${i}-active-help"${w.active ? ' checked' : ''}> Enabled</label>
<small id="wh-${i}-active-help" class="muted form-help">Enabling it again resets the failure count.</small>
<button type="submit">Save</button>
</form>
</details>
<form method="post" action="${base}/delete" class="inline" data-confirm="Delete the endpoint ${escapeHtml(w.url)}? It gets no more deliveries.">${hidden(v)}<button type="submit" class="secondary outline danger">Delete</button></form>
</div>`;
}

function registration(v: WebhooksView, w: WebhookItem, i: number): string {
  const state = w.active ? badge('active', 'good') : badge('disabled', 'bad');
  const canAct = v.csrf !== undefined;
  const redeliver = (d: WebhookItem['deliveries'][number]) =>
    !canAct || !w.active || d.status === 'PENDING'
      ? '<span class="muted">—</span>'
      : `<form method="post" action="/dashboard/webhooks/${escapeHtml(w.id)}/deliveries/${escapeHtml(d.id)}/redeliver" class="inline">${hidden(v)}<button type="submit" class="secondary outline" aria-label="Redeliver ${escapeHtml(d.event)} of ${escapeHtml(d.createdAt.slice(0, 16).replace('T', ' '))}">Redeliver</button></form>`;
  const deliveries = w.deliveries.length
    ? scrollTable(
        ['Event', 'Status', 'Response', 'Attempts', 'Last try (UTC)', 'Action'],
        w.deliveries.map((d) => [
          `${d.envelopeId ? `<a href="/dashboard/envelopes/${escapeHtml(d.envelopeId)}${query({ mode: v.mode })}"><code>${escapeHtml(d.event)}</code></a>` : `<code>${escapeHtml(d.event)}</code>`}${d.redeliveryOf ? ' <small class="muted">redelivery</small>' : ''}`,
          deliveryStatus(d),
          d.responseCode !== null ? `<code>${d.responseCode}</code>` : d.errorMessage ? `<small>${escapeHtml(d.errorMessage.slice(0, 80))}</small>` : '<span class="muted">—</span>',
          String(d.attempts),
          shortWhen(d.lastAttemptAt ?? d.createdAt),
          redeliver(d),
        ]),
        `Last ${w.deliveries.length} of ${w.totalDeliveries} deliveries`,
      )
    : '<p class="muted">No deliveries yet: one is made for each subscribed event of your envelopes. Send a test event to try your endpoint.</p>';
  return `<article class="webhook" aria-labelledby="wh-${i}">
<header><h2 id="wh-${i}" class="url">${escapeHtml(w.url)}</h2><p>${state}${w.consecutiveFailures ? ` <span class="badge bad">${w.consecutiveFailures} failed in a row</span>` : ''}</p></header>
${w.description ? `<p>${escapeHtml(w.description)}</p>` : ''}
<dl class="facts">
<div><dt>Events</dt><dd>${w.events.map((e) => `<code>${escapeHtml(e)}</code>`).join(' ')}</dd></div>
<div><dt>Created</dt><dd>${when(w.createdAt)}</dd></div>
<div><dt>Id</dt><dd><code class="id">wh_${escapeHtml(w.id)}</code></dd></div>
${w.disabledReason ? `<div><dt>Disabled because</dt><dd>${escapeHtml(w.disabledReason)}</dd></div>` : ''}
</dl>
${canAct ? actions(v, w, i) : ''}
<h3>Recent deliveries</h3>
${deliveries}
</article>`;
}

export function webhooksPage(v: WebhooksView): string {
  const curl = `curl ${v.publicUrl}/v1/webhooks \\
  -H "Authorization: Bearer ${v.mode === 'test' ? 'svc_test_' : 'svc_live_'}…" \\
  -H "Content-Type: application/json" \\
  -d '{"url":"https://example.com/hooks/signet","events":["envelope.completed"]}'`;
  const body = v.webhooks.length
    ? v.webhooks.map((w, i) => registration(v, w, i)).join('\n')
    : emptyState(`No ${v.mode === 'test' ? 'test ' : ''}webhook endpoints`, `<p>Add one here, or register one with the API; every delivery and its response shows up here.</p><pre><code>${escapeHtml(curl)}</code></pre>`);
  return `${pageHeader({ title: 'Webhooks', lead: 'Endpoints that hear about your envelopes, and what they answered.', path: '/dashboard/webhooks', mode: v.mode, counts: v.counts, fallback: v.testFallback ? 'webhook endpoints' : undefined })}
${v.created ? createdBox(v.created) : ''}
${v.csrf !== undefined ? createForm(v) : ''}
${body}`;
}
