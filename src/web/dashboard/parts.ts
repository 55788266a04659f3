/**
 * Small pieces the data pages share: status badges, the live/test switch, Previous/Next paging and the
 * page heading. Every value is escaped here; callers pass plain data.
 */
import { escapeHtml } from './layout.js';

export type Mode = 'live' | 'test';

const ENVELOPE_TONE: Record<string, 'good' | 'bad' | 'wait' | 'muted'> = {
  COMPLETED: 'good',
  REJECTED: 'bad',
  EXPIRED: 'bad',
  CANCELLED: 'bad',
  DRAFT: 'muted',
  PENDING: 'wait',
  SENT: 'wait',
  PARTIALLY_SIGNED: 'wait',
  SIGNED: 'good',
  SUCCESS: 'good',
  FAILED: 'bad',
};

/** `PARTIALLY_SIGNED` → "Partially signed". */
export const humanize = (s: string): string => {
  const words = s.toLowerCase().replace(/_/g, ' ');
  return words.charAt(0).toUpperCase() + words.slice(1);
};

/** A status as a coloured pill; the word is the information, the colour only repeats it. */
export const badge = (status: string, tone = ENVELOPE_TONE[status] ?? 'muted'): string => `<span class="badge ${tone}">${escapeHtml(humanize(status))}</span>`;

/** The query string of a page link, dropping empty values; `mode=live` is the default and left out. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '' && !(k === 'mode' && v === 'live')) q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}

/**
 * The page heading with, on pages that show API data, the live/test switch (as Stripe's "View test
 * data"): test keys see only test envelopes and webhooks, so the dashboard shows either side. With
 * `counts` the switch names both sides with their totals ("Live (0) · Test (3)") and marks the one shown,
 * so a person sees at once that the other side holds something.
 */
export function pageHeader(o: { title: string; lead?: string; path?: string; mode?: Mode; actions?: string; fallback?: string; counts?: Record<Mode, number> }): string {
  // On a fallback page "live" must be asked for by name: without ?mode the page would fall back again.
  const toLive = o.fallback ? '?mode=live' : '';
  let toggle = '';
  if (o.path && o.mode && o.counts) {
    const side = (m: Mode) => {
      const label = `${m === 'live' ? 'Live' : 'Test'} (${o.counts![m]})`;
      return m === o.mode
        ? `<li><a href="${escapeHtml(o.path!)}${m === 'live' ? toLive : '?mode=test'}" aria-current="page">${label}</a></li>`
        : `<li><a href="${escapeHtml(o.path!)}${m === 'live' ? '?mode=live' : '?mode=test'}">${label}</a></li>`;
    };
    toggle = `<nav class="mode-switch" aria-label="Live or test data"><ul>${side('live')}<li aria-hidden="true">·</li>${side('test')}</ul></nav>`;
  } else if (o.path && o.mode) {
    toggle = `<a class="mode-switch secondary outline" role="button" href="${escapeHtml(o.path)}${o.mode === 'live' ? '?mode=test' : toLive}">${o.mode === 'live' ? 'View test data' : 'View live data'}</a>`;
  }
  const banner =
    o.mode !== 'test'
      ? ''
      : o.fallback
        ? `<p class="test-banner" role="note"><strong class="badge test">Test data</strong> Showing test ${escapeHtml(o.fallback)}: this account has no live ones yet. Nothing here was charged or sent to real recipients.</p>`
        : `<p class="test-banner" role="note"><strong>Test data.</strong> You are looking at what your <code>svc_test_</code> keys created; nothing here was charged or sent to real recipients.</p>`;
  return `<div class="page-head"><hgroup><h1>${escapeHtml(o.title)}</h1>${o.lead ? `<p>${escapeHtml(o.lead)}</p>` : ''}</hgroup><div class="page-actions">${o.actions ?? ''}${toggle}</div></div>${banner}`;
}

/** Previous/Next links under a list, with "21–40 of 57"; a missing direction is plain text, not a dead link. */
export function pager(o: { path: string; params: Record<string, string | undefined>; page: number; perPage: number; total: number; noun: [string, string] }): string {
  if (o.total === 0) return '';
  const first = (o.page - 1) * o.perPage + 1;
  const last = Math.min(o.total, o.page * o.perPage);
  // Everything on one page: the count is the whole story, with no dead Previous/Next.
  if (o.page === 1 && last === o.total) return `<p class="pager-count">${o.total} ${o.total === 1 ? o.noun[0] : o.noun[1]}</p>`;
  const link = (page: number, label: string, rel: string) => `<a href="${escapeHtml(o.path + query({ ...o.params, page: page === 1 ? undefined : page }))}" rel="${rel}">${label}</a>`;
  const prev = o.page > 1 ? link(o.page - 1, '← Previous', 'prev') : '<span aria-disabled="true">← Previous</span>';
  const next = last < o.total ? link(o.page + 1, 'Next →', 'next') : '<span aria-disabled="true">Next →</span>';
  return `<nav class="pager" aria-label="Pages"><ul><li>${prev}</li></ul><p>${first}–${last} of ${o.total}</p><ul><li>${next}</li></ul></nav>`;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/**
 * A date in a table cell, short enough that a row fits: "7 Mar, 14:05" (UTC, as the column says), the
 * year only when it is not this one; the exact instant is in `datetime` and, for a pointer, `title`.
 */
export function shortWhen(d: Date | string | null, now: Date = new Date()): string {
  if (d === null) return '<span class="muted">—</span>';
  const date = typeof d === 'string' ? new Date(d) : d;
  const iso = date.toISOString();
  const year = date.getUTCFullYear() === now.getUTCFullYear() ? '' : ` ${date.getUTCFullYear()}`;
  return `<time datetime="${iso}" title="${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC">${date.getUTCDate()} ${MONTHS[date.getUTCMonth()]}${year}, ${iso.slice(11, 16)}</time>`;
}

/** An empty list: what it would hold, and how to get something into it. */
export const emptyState = (title: string, body: string): string => `<div class="empty"><p><strong>${escapeHtml(title)}</strong></p>${body}</div>`;
