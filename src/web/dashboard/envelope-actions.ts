/**
 * The sender's actions on an envelope's page: the action bar, each recipient's link with Copy and
 * Reissue, the confirmation pages of the two actions that destroy something (cancel, reissue), and the
 * notices shown after an action. Every value is escaped here.
 */
import { csrfField, escapeHtml } from './layout.js';
import { query, type Mode } from './parts.js';

export const DONE_NOTICES = {
  resent: 'Reminders sent to every recipient who still has to act.',
  'nobody-to-remind': 'Nobody to remind right now: no recipient whose turn it is still has to act.',
  cancelled: 'Envelope cancelled: its links no longer open anything, and any charge is refunded.',
  reissued: 'New link issued: the old one no longer works.',
  created: 'Envelope created: the invitations are on their way.',
  drafted: 'Draft created: place its fields, then send it.',
} as const;
export type DoneNotice = keyof typeof DONE_NOTICES;

type ActionEnvelope = { envelopeId: string; title: string | null; status: string; recipients: { name: string; email: string; role: string; signingStatus: string; signingUrl?: string }[] };

const LIVE = new Set(['PENDING', 'SENT', 'PARTIALLY_SIGNED']);
const path = (e: ActionEnvelope) => `/dashboard/envelopes/${encodeURIComponent(e.envelopeId)}`;
const modeField = (mode: Mode) => (mode === 'test' ? '<input type="hidden" name="mode" value="test">' : '');

/** Preview, Resend and Cancel, each offered only where the envelope's state allows it. */
export function envelopeActionBar(e: ActionEnvelope, mode: Mode, csrf: string): string {
  const q = query({ mode });
  const actions: string[] = [];
  if (e.status === 'DRAFT') actions.push(`<a role="button" href="${path(e)}/prepare${q}">Prepare fields</a>`);
  if (e.status !== 'CANCELLED' && e.status !== 'EXPIRED' && e.status !== 'REJECTED') {
    actions.push(`<a role="button" class="secondary outline" href="${path(e)}/preview${q}" target="_blank" rel="noopener">Preview document<span class="visually-hidden"> (opens in a new tab)</span></a>`);
  }
  if (e.status === 'SENT' || e.status === 'PARTIALLY_SIGNED') {
    actions.push(`<form method="post" action="${path(e)}/resend" class="inline">${csrfField(csrf)}${modeField(mode)}<button type="submit" class="secondary">Resend</button></form>`);
  }
  if (e.status !== 'COMPLETED' && e.status !== 'CANCELLED') actions.push(`<a role="button" class="secondary outline danger" href="${path(e)}/cancel${q}">Cancel envelope</a>`);
  return actions.join('');
}

/** Each recipient's signing link: Copy (dashboard.js) and, while they still have to act, Reissue. */
export function recipientLinks(e: ActionEnvelope, mode: Mode): string {
  if (!LIVE.has(e.status)) return '<p class="muted">Signing links work while the envelope is out for signature.</p>';
  const q = query({ mode });
  const items = e.recipients.map((r, i) => {
    const id = `link-${i + 1}`;
    const link = r.signingUrl ? `<code id="${id}" class="id">${escapeHtml(r.signingUrl)}</code>` : '<span class="muted">No link</span>';
    const copy = r.signingUrl ? `<button type="button" class="secondary outline" data-copy="${id}">Copy link<span class="visually-hidden"> of ${escapeHtml(r.name)}</span></button><span class="copy-status" role="status"></span>` : '';
    const reissue =
      r.signingStatus === 'NOT_SIGNED'
        ? `<a role="button" class="secondary outline" href="${path(e)}/recipients/${i + 1}/link${q}">Reissue link<span class="visually-hidden"> of ${escapeHtml(r.name)}</span></a>`
        : '';
    return `<li><p><strong>${escapeHtml(r.name)}</strong> <small>${escapeHtml(r.email)}</small></p><p class="link-line">${link}</p><div class="link-actions">${copy}${reissue}</div></li>`;
  });
  return `<ul class="recipient-links">${items.join('')}</ul>`;
}

export type ConfirmView = { kind: 'cancel' | 'reissue'; envelope: ActionEnvelope; mode: Mode; csrf: string; recipient?: { position: number; name: string; email: string } };

/** A page that says what the action destroys, with the action and a way back: it works without script. */
export function confirmPage(v: ConfirmView): string {
  const e = v.envelope;
  const title = e.title ? escapeHtml(e.title) : 'Untitled envelope';
  const back = `${path(e)}${query({ mode: v.mode })}`;
  const [heading, text, action, button] =
    v.kind === 'cancel'
      ? ['Cancel this envelope?', `<p>Cancelling <strong>${title}</strong> stops it for good: every signing link stops working, recipients who were invited are told, and any charge is refunded. This cannot be undone.</p>`, `${path(e)}/cancel`, 'Cancel envelope']
      : [
          'Reissue this link?',
          `<p>The current link of <strong>${escapeHtml(v.recipient!.name)}</strong> (${escapeHtml(v.recipient!.email)}) on <strong>${title}</strong> stops working at once. A new link is made and, if they were already invited, emailed to them.</p>`,
          `${path(e)}/recipients/${v.recipient!.position}/link`,
          'Reissue link',
        ];
  return `<nav aria-label="breadcrumb"><ul><li><a href="/dashboard/envelopes${query({ mode: v.mode })}">Envelopes</a></li><li><a href="${back}">${title}</a></li><li>${heading}</li></ul></nav>
<article class="confirm" aria-labelledby="confirm-title"><header><h1 id="confirm-title">${heading}</h1></header>${text}
<form method="post" action="${action}" class="confirm-actions">${csrfField(v.csrf)}${modeField(v.mode)}<button type="submit" class="danger">${button}</button> <a role="button" class="secondary outline" href="${back}">Keep it as it is</a></form></article>`;
}
