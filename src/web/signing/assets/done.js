// After the outcome: what happened, the recipient's copy once the envelope is sealed, and the sender's
// page (meta.redirectUrl) to go on to. Everything is built with DOM calls: no markup from the server.

import { t } from './i18n.js';

/** How long the page waits before following redirectUrl; "Stay on this page" stops it (WCAG 2.2.1). */
const REDIRECT_SECONDS = 6;
/** Seconds between looks at the session while the seal job runs; about two minutes in all. */
const COPY_POLL = [1, 1, 2, 2, 3, 3, 5, 5, 8, 8, 10, 10, 15, 15, 15, 15];

/** Only http and https are followed: anything else (javascript:, data:, a custom scheme) is dropped. */
export function safeRedirect(target) {
  if (!target) return null;
  try {
    const parsed = new URL(target, location.href);
    return parsed.protocol === 'https:' || parsed.protocol === 'http:' ? parsed : null;
  } catch {
    return null;
  }
}

const line = (text, testid) => {
  const p = document.createElement('p');
  p.className = 'done-line';
  if (testid) p.dataset.testid = testid;
  if (text) p.textContent = text;
  return p;
};

/** A file name for the saved copy: the title without characters file systems refuse. */
function fileName(title) {
  const base = (title || t('signing-done.fileDocument')).replace(/[\\/:*?"<>|\u0000-\u001f]+/g, ' ').replace(/\s+/g, ' ').trim().slice(0, 120) || 'document';
  return t('signing-done.fileName', { base });
}

/** The "Download your copy" link for a session whose envelope is sealed (`downloadUrl` set). */
export function copyLink(session) {
  const a = document.createElement('a');
  a.href = new URL(session.downloadUrl, location.href).href;
  a.className = 'button primary';
  a.textContent = t('signing-done.downloadCopy');
  a.dataset.testid = 'download-copy-link';
  a.setAttribute('download', fileName(session.envelope?.title));
  return a;
}

/**
 * Fills `banner` (a live region) with the outcome and moves focus to it, so a screen reader reads it and
 * Tab goes on to what it offers. `watchCopy()` resolves the fresh session or null; it is polled while
 * the envelope is being sealed, until the copy can be downloaded.
 */
export function showOutcome(banner, { text, redirectUrl, watchCopy }) {
  banner.hidden = false;
  banner.dataset.tone = 'success';
  banner.setAttribute('role', 'status');
  const copy = line('', 'done-copy');
  banner.replaceChildren(line(text, 'done-text'), copy);
  banner.tabIndex = -1;
  banner.focus();

  const target = safeRedirect(redirectUrl);
  if (target) offerRedirect(banner, target);
  if (watchCopy) pollForCopy(copy, watchCopy);
}

function offerRedirect(banner, target) {
  const where = line(t('signing-done.redirecting', { host: target.host, seconds: REDIRECT_SECONDS }), 'redirect-note');
  const actions = document.createElement('div');
  actions.className = 'done-actions';
  const go = document.createElement('a');
  go.href = target.href;
  go.rel = 'noreferrer';
  go.className = 'button secondary';
  go.textContent = t('signing-done.continue');
  go.dataset.testid = 'redirect-link';
  const stay = document.createElement('button');
  stay.type = 'button';
  stay.className = 'button secondary';
  stay.textContent = t('signing-done.stay');
  stay.dataset.testid = 'redirect-stay';
  stay.setAttribute('aria-label', t('signing-done.stay'));
  actions.append(go, stay);
  banner.append(where, actions);
  const timer = setTimeout(() => location.assign(target.href), REDIRECT_SECONDS * 1000);
  stay.addEventListener('click', () => {
    clearTimeout(timer);
    where.textContent = t('signing-done.continueWhenReady', { host: target.host });
    stay.remove();
    go.focus();
  });
}

async function pollForCopy(copy, watchCopy) {
  for (let i = 0; ; i++) {
    const session = await watchCopy().catch(() => null);
    if (session?.downloadUrl) {
      copy.replaceChildren(copyLink(session));
      return;
    }
    // Others still have to act: the copy comes by email when they have.
    if (session && session.envelope?.status !== 'COMPLETED') {
      copy.textContent = t('signing-done.copyByEmailLater');
      return;
    }
    if (i >= COPY_POLL.length) {
      copy.textContent = t('signing-done.copyByEmail');
      return;
    }
    if (i === 0) copy.textContent = t('signing-done.sealing');
    await new Promise((resolve) => setTimeout(resolve, COPY_POLL[i] * 1000));
  }
}
