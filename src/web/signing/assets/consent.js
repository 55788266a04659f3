// Who asks and why (the sender, their message, the deadline), and the consent step: before a recipient's
// first action the page asks them to agree to use electronic records and signatures (ESIGN, eIDAS).
// Declining the document needs no consent, so the step offers it too.

import { locale, problem, t } from './i18n.js';

const $ = (id) => document.getElementById(id);

/** A deadline as the recipient reads it: their own time zone, named. */
export function readableTime(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return null;
  // The page's language, the recipient's own time zone (the browser's).
  return new Intl.DateTimeFormat(locale, { year: 'numeric', month: 'long', day: 'numeric', hour: '2-digit', minute: '2-digit', timeZoneName: 'short' }).format(d);
}

/** The sender's name and message, and by when to act; nothing before a gated recipient's code (the session has none). */
export function showRequest(session) {
  if (!session.sender) return;
  const box = $('request-info');
  const name = session.sender.name?.trim();
  showLogo(session.sender.logo, name);
  const role = session.recipient.role === 'APPROVER' ? 'approve' : session.recipient.role === 'VIEWER' || session.recipient.role === 'CC' ? 'view' : 'sign';
  $('sender-line').textContent = name ? t('signing-consent.senderAsks', { name, role }) : t('signing-consent.youAreAsked', { role });
  const message = session.sender.message?.trim();
  if (message) {
    $('sender-message').textContent = message;
    $('sender-message').hidden = false;
  }
  const until = session.expiresAt && session.canAct ? readableTime(session.expiresAt) : null;
  if (until) {
    $('deadline-line').textContent = t('signing-consent.respondBy', { until });
    $('deadline-line').hidden = false;
  }
  box.hidden = false;
}

/**
 * The sender's logo, as the document recorded it at create: a file of /brand/ (the base is relative to
 * this page, so it works under a path prefix), named by the sender's name for screen readers.
 */
function showLogo(file, name) {
  if (typeof file !== 'string' || !/^[0-9a-f]{64}\.(png|jpg)$/.test(file)) return;
  const img = $('brand-logo');
  img.alt = name || t('signing-consent.senderLogo');
  img.src = document.getElementById('signing-app').dataset.brandBase + file;
  img.hidden = false;
}

/** The browser's IANA time zone (the certificate shows the recipient's times in it too), or null. */
function timeZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || null;
  } catch {
    return null;
  }
}

/**
 * Shows the consent step and resolves once the server recorded the consent. `decline` opens the
 * page's decline dialog. Paragraphs of the text are separated by blank lines (plain text, never HTML).
 */
export function askConsent(session, { call, url, decline }) {
  const step = $('consent-step');
  const heading = $('consent-title');
  const box = $('consent-text');
  const check = $('consent-check');
  const error = $('consent-error');
  const submit = $('consent-submit');
  box.replaceChildren(
    ...String(session.consent.text)
      .split(/\n\s*\n/)
      .map((para) => {
        const p = document.createElement('p');
        p.textContent = para.trim();
        return p;
      }),
  );
  step.hidden = false;
  // Where a screen reader and the keyboard start: the step's heading.
  heading.focus();
  $('consent-decline').addEventListener('click', decline);
  check.addEventListener('change', () => {
    if (check.checked) {
      error.textContent = '';
      check.removeAttribute('aria-invalid');
    }
  });

  return new Promise((resolve) => {
    let busy = false;
    $('consent-form').addEventListener('submit', async (e) => {
      e.preventDefault();
      if (busy) return;
      if (!check.checked) {
        check.setAttribute('aria-invalid', 'true');
        error.textContent = t('signing-consent.tickToAgree');
        return check.focus();
      }
      busy = true;
      submit.disabled = true;
      let result;
      try {
        result = await call(url, { method: 'POST', body: { timeZone: timeZone() } });
      } catch {
        result = null;
      }
      busy = false;
      submit.disabled = false;
      if (!result?.ok) {
        error.textContent = result ? problem(result, 'signing-consent.notRecorded') : t('signing-consent.offline');
        return;
      }
      step.hidden = true;
      resolve(result.body);
    });
  });
}

/** Hides the step (after the document was declined from it). */
export function closeConsent() {
  $('consent-step').hidden = true;
}
