/**
 * GET /dashboard/envelopes/new: an envelope from the dashboard as a plain form (no script needed): the
 * PDF, a title and message, a fixed number of recipient rows (empty rows are ignored), live or test,
 * and "Create draft" or "Create and send". Every value is escaped here.
 */
import { csrfField, escapeHtml } from './layout.js';
import { query, type Mode } from './parts.js';

/** Rows on the form; the API takes more, and so does a draft's field editor later. */
export const RECIPIENT_ROWS = 5;
export const FORM_ROLES = ['SIGNER', 'APPROVER', 'CC', 'VIEWER'] as const;

export type NewEnvelopeValues = { title?: string; message?: string; recipients?: { name?: string; email?: string; role?: string }[] };

export type NewEnvelopeView = {
  csrf: string;
  /** The form's idempotency key: the same submission twice (a reload, a double click) makes one envelope. */
  idempotencyKey: string;
  mode: Mode;
  /** Whether the account can send live (a live send is charged). */
  values?: NewEnvelopeValues;
  maxPdfMb: number;
};

const ROLE_LABELS: Record<(typeof FORM_ROLES)[number], string> = { SIGNER: 'Signer', APPROVER: 'Approver', CC: 'Gets a copy (CC)', VIEWER: 'Viewer' };

function recipientRow(i: number, v: { name?: string; email?: string; role?: string } = {}): string {
  const n = i + 1;
  const role = v.role ?? 'SIGNER';
  const options = FORM_ROLES.map((r) => `<option value="${r}"${r === role ? ' selected' : ''}>${ROLE_LABELS[r]}</option>`).join('');
  return `<fieldset class="recipient-row"><legend>Recipient ${n}${i === 0 ? '' : ' <small>(optional)</small>'}</legend>
<div class="grid">
<label>Name<input name="r${n}_name" autocomplete="off" maxlength="200" value="${escapeHtml(v.name ?? '')}"${i === 0 ? ' required' : ''}></label>
<label>Email<input type="email" name="r${n}_email" autocomplete="off" maxlength="320" value="${escapeHtml(v.email ?? '')}"${i === 0 ? ' required' : ''}></label>
<label>Role<select name="r${n}_role">${options}</select></label>
</div></fieldset>`;
}

export function newEnvelopePage(v: NewEnvelopeView): string {
  const values = v.values ?? {};
  const rows = Array.from({ length: RECIPIENT_ROWS }, (_, i) => recipientRow(i, values.recipients?.[i])).join('\n');
  return `<nav aria-label="breadcrumb"><ul><li><a href="/dashboard/envelopes${query({ mode: v.mode })}">Envelopes</a></li><li>New envelope</li></ul></nav>
<div class="page-head"><hgroup><h1>New envelope</h1><p>Upload a PDF and say who signs it.</p></hgroup></div>
<form method="post" action="/dashboard/envelopes/new" enctype="multipart/form-data" class="new-envelope">
${csrfField(v.csrf)}
<input type="hidden" name="idempotencyKey" value="${escapeHtml(v.idempotencyKey)}">
<article aria-labelledby="doc-title"><header><h2 id="doc-title">Document</h2></header>
<label>PDF <small>(up to ${v.maxPdfMb} MB)</small><input type="file" name="pdf" accept="application/pdf,.pdf" required aria-describedby="pdf-help"></label>
<p id="pdf-help" class="muted">To send at once, put markers such as <code>{{signature, r1}}</code> in the PDF where each recipient signs; otherwise create a draft and place the fields by sight.</p>
<label>Title<input name="title" maxlength="300" value="${escapeHtml(values.title ?? '')}"></label>
<label>Message to the recipients <small>(optional)</small><textarea name="message" maxlength="5000" rows="3">${escapeHtml(values.message ?? '')}</textarea></label>
</article>
<article aria-labelledby="recipients-title"><header><h2 id="recipients-title">Recipients</h2></header>
<p class="muted">In signing order: recipient 1 is r1 in the markers. Leave the rows you do not need empty.</p>
${rows}
</article>
<article aria-labelledby="mode-title"><header><h2 id="mode-title">Mode</h2></header>
<fieldset><legend class="visually-hidden">Live or test</legend>
<label><input type="radio" name="mode" value="test"${v.mode === 'test' ? ' checked' : ''}> Test: free, emails go to the outbox only, the sealed PDF is marked TEST</label>
<label><input type="radio" name="mode" value="live"${v.mode === 'live' ? ' checked' : ''}> Live: charged, real emails to the recipients</label>
</fieldset>
</article>
<div class="confirm-actions"><button type="submit" name="intent" value="send">Create and send</button><button type="submit" name="intent" value="draft" class="secondary">Create draft</button></div>
</form>`;
}
