// The recipient signing page. Plain ES module, no build step. The server sends a static shell; this
// fetches the recipient's session, renders the document and their fields, and posts the outcome.
import { askConsent, closeConsent, showRequest } from './consent.js';
import { copyLink, showOutcome } from './done.js';
import { notifyParent } from './embed-events.js';
import { offerDelegation } from './delegation.js';
import { createFieldLayer } from './fields.js';
import { createPageViews, openPdf } from './pdf-view.js';
import { createSignatureDialog } from './signature-dialog.js';
import { locale, problem, t } from './i18n.js';
import { confirmIdentity } from './verification.js';
import { createZoom } from './zoom.js';

const $ = (id) => document.getElementById(id);
const root = $('signing-app');
const url = (attr) => new URL(root.dataset[attr], location.href).href;
const urls = { session: url('sessionUrl'), complete: url('completeUrl'), reject: url('rejectUrl'), consent: url('consentUrl'), code: url('codeUrl'), confirm: url('confirmUrl'), pdfjs: url('pdfjsBase') };

const banner = $('status-banner');
const actionBar = $('action-bar');
const finishButton = $('finish-button');
const rejectButton = $('reject-button');
const nextButton = $('next-field-button');
const progress = $('progress');
const documentArea = $('document');
/** The phone zoom (zoom.js), once the document is shown. */
let zoom = null;

/** Shows the one status line under the header. tone: info | waiting | success | error. */
function say(tone, text, extra) {
  banner.hidden = false;
  banner.dataset.tone = tone;
  banner.setAttribute('role', tone === 'error' ? 'alert' : 'status');
  banner.replaceChildren(document.createTextNode(text));
  if (extra) banner.append(' ', extra);
}

/** JSON request to our own routes; resolves {status, body}, rejects only when the network fails. */
async function call(target, { method = 'GET', body } = {}) {
  const response = await fetch(target, {
    method,
    // The page's language: the server words the built-in consent text in it.
    headers: { accept: 'application/json', 'accept-language': locale, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    credentials: 'same-origin',
    cache: 'no-store',
  });
  const data = await response.json().catch(() => null);
  return { status: response.status, ok: response.ok, body: data };
}

const person = (p) => (p.name ? `${p.name} <${p.email}>` : p.email);
const list = (items) => new Intl.ListFormat(locale, { type: 'conjunction' }).format(items);

/** Why this recipient cannot act now, in words. */
function reasonText(session) {
  const { reason, waitingFor = [], recipient, envelope } = session;
  switch (reason) {
    case 'waiting':
      return waitingFor.length
        ? t('signing.waitingFor', { people: list(waitingFor.map(person)) })
        : t('signing.notYourTurn');
    case 'signed':
      return recipient.role === 'APPROVER' ? t('signing.reasonApproved') : t('signing.reasonSigned');
    case 'rejected':
      return recipient.status === 'REJECTED' ? t('signing.reasonYouDeclined') : t('signing.reasonDeclined');
    case 'completed':
      return t('signing.reasonCompletedByAll');
    case 'cancelled':
      return t('signing.reasonCancelled');
    case 'expired':
      return t('signing.reasonExpired');
    case 'view_only':
      return t('signing.reasonViewOnly');
    default:
      return envelope.status === 'COMPLETED' ? t('signing.reasonCompleted') : t('signing.reasonUnavailable');
  }
}

/** A signer waiting for an earlier one may already decline (not while the envelope is still a draft or unsent). */
function canDeclineEarly(session) {
  return session.reason === 'waiting' && !['DRAFT', 'PENDING'].includes(session.envelope.status) && ['SIGNER', 'APPROVER'].includes(session.recipient.role);
}

/**
 * After the outcome: lock the page, say what happened, offer the copy once sealed (`watchCopy`), and go
 * on to redirectUrl (http/https only) when the sender gave one.
 */
function concluded(layer, text, { redirectUrl = null, watchCopy = null } = {}) {
  layer?.lock();
  closeConsent();
  actionBar.hidden = true;
  zoom?.reset();
  root.dataset.outcome = 'done';
  showOutcome(banner, { text, redirectUrl, watchCopy });
}

/** The session as it is now, for the post-sign page; null when it cannot be read. */
async function freshSession() {
  const { session } = await loadSession();
  return session ?? null;
}

function showHeader(session) {
  const title = session.envelope.title || t('signing.untitled');
  $('document-title').textContent = title;
  document.title = t('signing.windowTitle', { title });
  const line = $('recipient-line');
  const as = session.canAct ? (session.recipient.role === 'APPROVER' ? 'signing.approvingAs' : 'signing.signingAs') : 'signing.viewingAs';
  line.textContent = t(as, { person: person(session.recipient) });
  // No document after a cancellation, a rejection or expiry: nothing to download.
  if (!session.documentUrl) return;
  const download = document.createElement('a');
  download.href = new URL(session.documentUrl, location.href).href;
  download.textContent = t('signing.downloadPdf');
  download.className = 'download';
  download.dataset.testid = 'download-link';
  download.setAttribute('aria-label', t('signing.downloadPdfLabel'));
  download.setAttribute('download', '');
  line.append(' · ', download);
}

async function loadSession() {
  let result;
  try {
    result = await call(urls.session);
  } catch {
    return { error: t('signing.offlineReload') };
  }
  if (result.body?.code === 'SIGNING_LINK_HANDED_OVER') return { error: t('signing-delegation.handedOver'), fatal: true, title: t('signing-delegation.handedOverTitle') };
  if (result.status === 404) return { error: t('signing.linkInactive'), fatal: true };
  if (!result.ok || !result.body?.envelope) return { error: problem(result, 'signing.loadFailed') };
  return { session: result.body };
}

async function loadDocument(session) {
  const response = await fetch(new URL(session.documentUrl, location.href), { credentials: 'same-origin', cache: 'no-store' });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  const doc = await openPdf(urls.pdfjs, new Uint8Array(await response.arrayBuffer()));
  $('document-loading')?.remove();
  return createPageViews(documentArea, doc);
}

/** Finish and Next field; `hooks` receives the field layer's callbacks. */
function wireFinish(session, layer, hooks) {
  const signatureDialog = createSignatureDialog();
  const approver = session.recipient.role === 'APPROVER';
  finishButton.textContent = approver ? t('signing.approve') : t('signing.finish');
  finishButton.setAttribute('aria-label', approver ? t('signing.approveLabel') : t('signing.finishLabel'));
  actionBar.hidden = false;
  finishButton.hidden = false;
  progress.hidden = false;
  let busy = false;
  // "Start" until the recipient begins (with the guide or on their own), then "Next".
  let started = false;

  // Set while the banner shows the "fields need your attention" message, which goes once they are done.
  let checkFailed = false;
  const updateProgress = () => {
    const { done, total } = layer.progress();
    const text = total ? t('signing.progress', { done, total }) : t('signing.noFields');
    // A live region: rewrite it only when the count moves, so a screen reader is not told it on every key.
    if (progress.textContent !== text) progress.textContent = text;
    progress.dataset.complete = String(done === total);
    started ||= done > 0;
    nextButton.hidden = total === 0 || done === total;
    nextButton.textContent = started ? t('signing.next') : t('signing.start');
    nextButton.setAttribute('aria-label', started ? t('signing.nextLabel') : t('signing.startLabel'));
    // Not `disabled`: the button stays in the Tab order, is announced as unavailable, and pressing it
    // shows what is missing.
    finishButton.setAttribute('aria-disabled', String(done < total));
    if (checkFailed && done === total) {
      checkFailed = false;
      banner.hidden = true;
    }
  };
  hooks.change = updateProgress;
  updateProgress();

  const setBusy = (on) => {
    busy = on;
    for (const b of [finishButton, rejectButton, nextButton]) b.disabled = on;
    root.setAttribute('aria-busy', String(on));
  };

  // A keyboard cannot draw: opened from the keyboard, the dialog starts on Type.
  hooks.sign = async (field, control, { keyboard = false } = {}) => {
    const sig = await signatureDialog.open(session.recipient.name, { keyboard });
    if (sig) layer.setSignature(sig);
    updateProgress();
    // Back where the dialog was opened from (WCAG 2.4.3).
    control.focus();
  };

  /** The guide: to the next field that needs something, opening the signature dialog on a signature field. */
  const guide = async ({ keyboard, from } = {}) => {
    started = true;
    updateProgress();
    const w = layer.focusNext(from);
    if (!w) return finishButton.focus();
    if (layer.isSign(w) && !layer.signature) await hooks.sign(w.field, w.control, { keyboard });
  };
  hooks.advance = (w) => guide({ keyboard: true, from: w });

  // detail 0: activated by Enter or Space, not a pointer.
  nextButton.addEventListener('click', (e) => guide({ keyboard: e.detail === 0 }));

  finishButton.addEventListener('click', async () => {
    if (busy) return;
    started = true;
    const bad = layer.validate();
    if (bad.length) {
      say('error', t('signing.fieldsNeedAttention', { count: bad.length }));
      checkFailed = true;
      layer.focusWidget(bad[0]);
      return;
    }
    const body = { fields: layer.submission() };
    if (layer.signature) {
      const { kind, text, image } = layer.signature;
      body.signature = kind === 'typed' ? { kind, text, image } : { kind, image };
    }
    setBusy(true);
    checkFailed = false;
    say('info', approver ? t('signing.approving') : t('signing.signing'));
    let result;
    try {
      result = await call(urls.complete, { method: 'POST', body });
    } catch {
      setBusy(false);
      return say('error', t('signing.offlineFinish'));
    }
    if (result.ok) {
      notifyParent('signed');
      const titled = session.envelope.title ? 'titled' : 'untitled';
      const text = t(result.body?.status === 'APPROVED' ? 'signing.youApproved' : 'signing.youSigned', { title: session.envelope.title ?? '', titled });
      return concluded(layer, text, { redirectUrl: result.body?.redirectUrl ?? session.redirectUrl, watchCopy: freshSession });
    }
    setBusy(false);
    const code = result.body?.code;
    const message = problem(result, 'signing.failed');
    if (code === 'VALIDATION_ERROR') {
      // A path names a field by id ("body.fields[fieldId=12]") or by its place in what we sent ("body.fields.1.value").
      let placed = 0;
      for (const d of result.body?.details ?? []) {
        const path = String(d.path ?? '');
        const byId = /fieldId=(\d+)/.exec(path);
        const byIndex = /fields\.(\d+)/.exec(path);
        const fieldId = byId ? Number(byId[1]) : byIndex ? body.fields[Number(byIndex[1])]?.fieldId : undefined;
        if (fieldId !== undefined && layer.showServerError(fieldId, t('signing.checkField'))) placed++;
      }
      return say('error', placed ? t('signing.someFieldsNeedAttention') : message);
    }
    if (code === 'NOT_YOUR_TURN' || code === 'ALREADY_ACTED' || code === 'ENVELOPE_NOT_ACTIVE') {
      layer.lock();
      actionBar.hidden = true;
      const fresh = await loadSession();
      return say(code === 'ALREADY_ACTED' ? 'info' : 'waiting', fresh.session ? reasonText(fresh.session) : message);
    }
    say('error', t('signing.entriesKept', { message }));
  });
}

/** Decline with a reason. Also offered while waiting for one's turn: a later signer may refuse early. */
let declineLayer = null;
let declineWired = false;
function wireDecline(layer) {
  actionBar.hidden = false;
  rejectButton.hidden = false;
  declineLayer = layer;
  // Wired once: the consent step wires it before the document is shown, the document again after.
  if (declineWired) return;
  declineWired = true;
  const rejectDialog = $('reject-dialog');
  const reason = $('reject-reason');
  const rejectError = $('reject-error');
  rejectButton.addEventListener('click', () => {
    rejectError.textContent = '';
    rejectDialog.showModal();
    reason.focus();
  });
  $('reject-cancel').addEventListener('click', () => rejectDialog.close());
  rejectDialog.addEventListener('close', () => {
    if (!$('consent-step').hidden) $('consent-decline').focus();
    else if (rejectButton.isConnected && !actionBar.hidden) rejectButton.focus();
  });
  $('reject-confirm').addEventListener('click', async () => {
    const text = reason.value.trim();
    if (!text) {
      rejectError.textContent = t('signing.giveReason');
      reason.setAttribute('aria-invalid', 'true');
      reason.focus();
      return;
    }
    reason.removeAttribute('aria-invalid');
    const confirm = $('reject-confirm');
    confirm.disabled = true;
    let result;
    try {
      result = await call(urls.reject, { method: 'POST', body: { reason: text } });
    } catch {
      confirm.disabled = false;
      rejectError.textContent = t('signing.offlineRetry');
      return;
    }
    confirm.disabled = false;
    if (!result.ok) {
      rejectError.textContent = problem(result, 'signing.failed');
      return;
    }
    rejectDialog.close();
    notifyParent('declined');
    concluded(declineLayer, t('signing.youDeclined'));
  });
}

async function main() {
  let { session, error, fatal, title } = await loadSession();
  // A gated recipient confirms their email address first; until then the server tells the page nothing
  // about the document (not its title, not who is on it), only where the code goes.
  if (session?.reason === 'verification_required') {
    $('document-title').textContent = t('signing.documentWaiting');
    $('recipient-line').textContent = '';
    documentArea.hidden = true;
    root.dataset.step = 'verification';
    await confirmIdentity(session, { call, urls });
    root.dataset.step = 'document';
    documentArea.hidden = false;
    ({ session, error, fatal } = await loadSession());
    if (session?.canAct) say('success', t('signing.emailConfirmed'));
  }
  if (!session) {
    $('document-title').textContent = title ?? (fatal ? t('signing.invalidTitle') : t('signing.unavailableTitle'));
    $('document-loading')?.remove();
    documentArea.setAttribute('aria-busy', 'false');
    notifyParent('error');
    return say('error', error);
  }
  root.dataset.canAct = String(session.canAct);
  notifyParent('ready');
  showHeader(session);
  showRequest(session);
  offerDelegation(session, { call, say, done: () => { closeConsent(); actionBar.hidden = documentArea.hidden = true; root.dataset.outcome = 'delegated'; } });
  // Before any action but declining, the recipient agrees to electronic records and signatures (once).
  if (session.canAct && session.consent && !session.consent.given) {
    documentArea.hidden = true;
    root.dataset.step = 'consent';
    wireDecline(null);
    actionBar.hidden = true;
    await askConsent(session, { call, url: urls.consent, decline: () => rejectButton.click() });
    root.dataset.step = 'document';
    documentArea.hidden = false;
    // After a gated recipient's code the banner already says what comes next.
    if (banner.hidden) say('success', t('signing.consentThanks'));
  }
  if (!session.canAct) {
    say(session.reason === 'view_only' ? 'info' : 'waiting', reasonText(session));
    // Sealed: whoever opens their link again gets their copy here.
    if (session.downloadUrl) banner.append(' ', copyLink(session));
  }

  if (!session.documentUrl) {
    $('document-loading')?.remove();
    documentArea.setAttribute('aria-busy', 'false');
    return;
  }

  let views;
  try {
    views = await loadDocument(session);
  } catch (err) {
    console.error(err);
    $('document-loading')?.remove();
    documentArea.setAttribute('aria-busy', 'false');
    return say('error', t('signing.displayFailed'));
  }
  documentArea.setAttribute('aria-busy', 'false');

  const hooks = {};
  zoom = createZoom({ area: documentArea, resetButton: $('zoom-reset'), afterReset: () => (nextButton.hidden ? finishButton : nextButton).focus() });
  const layer = createFieldLayer({
    fields: session.fields ?? [],
    views,
    canAct: session.canAct,
    zoom,
    onSignRequest: (field, control, how) => hooks.sign?.(field, control, how),
    onChange: () => hooks.change?.(),
    onAdvance: (w) => hooks.advance?.(w),
    attachmentsUrl: root.dataset.attachmentsUrl,
  });
  if (session.canAct) wireFinish(session, layer, hooks);
  if (session.canAct || canDeclineEarly(session)) wireDecline(layer);
  root.dataset.ready = 'true';
}

main().catch((err) => {
  console.error(err);
  say('error', t('signing.pageFailed'));
});
