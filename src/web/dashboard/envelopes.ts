/** GET /dashboard/envelopes and /dashboard/envelopes/:id: the list with a status filter and paging, and one envelope. */
import { envelopeActionBar, recipientLinks } from './envelope-actions.js';
import { escapeHtml, scrollTable, when } from './layout.js';
import { ENVELOPE_COLUMNS, envelopeRows, type EnvelopeListItem } from './overview.js';
import { badge, emptyState, humanize, pageHeader, pager, query, shortWhen, type Mode } from './parts.js';

export type EnvelopeListView = { mode: Mode; /** No ?mode asked and nothing live: these are test envelopes, said so. */ testFallback?: boolean; /** Envelopes on each side, for the switch. */ counts?: Record<Mode, number>; status?: string; statuses: readonly string[]; page: number; perPage: number; total: number; rows: EnvelopeListItem[] };

export function envelopeListPage(v: EnvelopeListView): string {
  const options = ['<option value="">All statuses</option>', ...v.statuses.map((s) => `<option value="${s}"${s === v.status ? ' selected' : ''}>${escapeHtml(humanize(s))}</option>`)].join('');
  const filter = `<form method="get" action="/dashboard/envelopes" class="filters" aria-label="Filter envelopes">
${v.mode === 'test' ? '<input type="hidden" name="mode" value="test">' : ''}
<label for="status-filter">Status</label>
<select id="status-filter" name="status">${options}</select>
<button type="submit" class="secondary">Filter</button>
</form>`;
  const body = v.rows.length
    ? scrollTable(ENVELOPE_COLUMNS, envelopeRows(v.rows, v.mode)) +
      pager({ path: '/dashboard/envelopes', params: { mode: v.mode === 'test' ? 'test' : undefined, status: v.status }, page: v.page, perPage: v.perPage, total: v.total, noun: ['envelope', 'envelopes'] })
    : v.total > 0
      ? `<p>There is no page ${v.page}. <a href="/dashboard/envelopes${query({ mode: v.mode, status: v.status })}">Back to the first page</a></p>`
      : emptyState(
          v.status ? `No ${humanize(v.status).toLowerCase()} envelopes` : `No ${v.mode === 'test' ? 'test ' : ''}envelopes yet`,
          v.status ? `<p><a href="/dashboard/envelopes${query({ mode: v.mode })}">Show all statuses</a></p>` : '<p>Envelopes you create with <code>POST /v1/envelopes</code> show up here with their status.</p>',
        );
  return `${pageHeader({ title: 'Envelopes', lead: 'Everything you sent for signature, newest first.', path: '/dashboard/envelopes', mode: v.mode, counts: v.counts, fallback: v.testFallback ? 'envelopes' : undefined, actions: '<a role="button" href="/dashboard/envelopes/new">New envelope</a>' })}
${filter}
${body}`;
}

export type EnvelopeDetail = {
  envelopeId: string;
  title: string | null;
  status: string;
  createdAt: string;
  updatedAt: string;
  completedAt: string | null;
  expiresAt: string;
  storageExpiresAt: string | null;
  recipients: { name: string; email: string; role: string; signingUrl?: string; signingStatus: string; readStatus: string; signedAt: string | null; viewedAt: string | null; rejectedAt: string | null; rejectionReason: string | null }[];
  events?: { event: string; eventType: string; recipientEmail: string | null; occurredAt: string }[];
};

function recipientStatus(r: EnvelopeDetail['recipients'][number]): string {
  if (r.signingStatus === 'SIGNED') return badge('SIGNED');
  if (r.signingStatus === 'REJECTED') return `${badge('REJECTED')}${r.rejectionReason ? ` <small>${escapeHtml(r.rejectionReason)}</small>` : ''}`;
  return badge(r.readStatus === 'OPENED' ? 'OPENED' : 'NOT_OPENED', r.readStatus === 'OPENED' ? 'wait' : 'muted');
}

/** `actions.csrf`: the page offers the sender's actions (envelope-actions.ts). */
export function envelopeDetailPage(e: EnvelopeDetail, mode: Mode, actions?: { csrf: string }): string {
  const q = query({ mode });
  const download =
    e.status === 'COMPLETED'
      ? `<a role="button" href="/dashboard/envelopes/${escapeHtml(e.envelopeId)}/download${q}" download>Download signed PDF</a>`
      : e.status === 'DRAFT' && mode === 'live'
        ? `<a role="button" href="/dashboard/envelopes/${escapeHtml(e.envelopeId)}/prepare">Prepare fields and send</a>`
        : '';
  const dates = `<dl class="facts">
<div><dt>Status</dt><dd>${badge(e.status)}</dd></div>
<div><dt>Created</dt><dd>${when(e.createdAt)}</dd></div>
<div><dt>${e.completedAt ? 'Completed' : 'Last change'}</dt><dd>${when(e.completedAt ?? e.updatedAt)}</dd></div>
<div><dt>Signing window ends</dt><dd>${when(e.expiresAt)}</dd></div>
<div><dt>Documents kept until</dt><dd>${when(e.storageExpiresAt)}</dd></div>
<div><dt>Envelope id</dt><dd><code class="id">${escapeHtml(e.envelopeId)}</code></dd></div>
</dl>`;
  const recipients = scrollTable(
    ['Name', 'Email', 'Role', 'Status', 'Viewed (UTC)', 'Signed (UTC)'],
    e.recipients.map((r) => [escapeHtml(r.name), escapeHtml(r.email), escapeHtml(humanize(r.role)), recipientStatus(r), shortWhen(r.viewedAt), shortWhen(r.signedAt ?? r.rejectedAt)]),
  );
  const events = e.events?.length
    ? scrollTable(
        ['Event', 'Recipient', 'When (UTC)'],
        e.events.map((ev) => [`<code>${escapeHtml(ev.event)}</code>`, ev.recipientEmail ? escapeHtml(ev.recipientEmail) : '<span class="muted">—</span>', shortWhen(ev.occurredAt)]),
      )
    : '<p class="muted">No events yet.</p>';
  return `<nav aria-label="breadcrumb"><ul><li><a href="/dashboard/envelopes${q}">Envelopes</a></li><li>${e.title ? escapeHtml(e.title) : 'Untitled envelope'}</li></ul></nav>
${pageHeader({ title: e.title ?? 'Untitled envelope', actions: download + (actions ? envelopeActionBar(e, mode, actions.csrf) : '') })}
${mode === 'test' ? '<p class="test-banner" role="note"><strong>Test data.</strong> A test envelope: free, and its sealed PDF is marked TEST.</p>' : ''}
<article aria-labelledby="facts-title"><header><h2 id="facts-title">Details</h2></header>${dates}</article>
<article aria-labelledby="recipients-title"><header><h2 id="recipients-title">Recipients</h2></header>${recipients}</article>
${actions ? `<article aria-labelledby="links-title"><header><h2 id="links-title">Signing links</h2></header>${recipientLinks(e, mode)}</article>` : ''}
<article aria-labelledby="events-title"><header><h2 id="events-title">Events</h2></header>${events}</article>`;
}
