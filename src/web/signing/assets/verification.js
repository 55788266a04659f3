// The code step of a recipient who must confirm their email address before the server shows them the
// document: send a code to their address, enter it, and the page goes on to the document.

import { locale, problem, t } from './i18n.js';

const $ = (id) => document.getElementById(id);

const timeOf = (iso) => {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? null : new Intl.DateTimeFormat(locale, { hour: '2-digit', minute: '2-digit' }).format(d);
};

/**
 * Shows the code step and resolves once the server has confirmed the code. `call` is the page's JSON
 * request helper; `urls.code` sends a code, `urls.confirm` checks one.
 */
export function confirmIdentity(session, { call, urls }) {
  const step = $('verify-step');
  const send = $('verify-send');
  const sent = $('verify-sent');
  const input = $('verify-code');
  const confirm = $('verify-confirm');
  const error = $('verify-error');
  // Masked by the server (`m***@example.com`): the link alone does not spell out whose it is.
  const address = session.recipient.email;
  $('verify-address').textContent = address;
  step.hidden = false;

  let cooldown;
  /** Keeps Send disabled while the server would refuse another code, counting down on the button. */
  const coolDown = (seconds) => {
    clearInterval(cooldown);
    let left = Math.ceil(seconds);
    const tick = () => {
      if (left <= 0) {
        clearInterval(cooldown);
        send.disabled = false;
        send.textContent = t('signing-verify.sendNew');
        return;
      }
      send.disabled = true;
      send.textContent = t('signing-verify.sendNewIn', { seconds: left });
      left--;
    };
    tick();
    cooldown = setInterval(tick, 1000);
  };

  const fail = (text) => {
    error.textContent = text;
    input.setAttribute('aria-invalid', 'true');
  };

  send.addEventListener('click', async () => {
    error.textContent = '';
    send.disabled = true;
    send.textContent = t('signing-verify.sending');
    let result;
    try {
      result = await call(urls.code, { method: 'POST', body: {} });
    } catch {
      send.disabled = false;
      send.textContent = t('signing.verifySend');
      return fail(t('signing-verify.offline'));
    }
    if (!result.ok) {
      const wait = Number(result.body?.retryAfterSeconds ?? 0);
      if (wait > 0) coolDown(wait);
      else {
        send.disabled = false;
        send.textContent = t('signing.verifySend');
      }
      return fail(problem(result, 'signing-verify.notSent'));
    }
    const until = result.body?.expiresAt ? timeOf(result.body.expiresAt) : null;
    sent.hidden = false;
    sent.textContent = until ? t('signing-verify.sentUntil', { address, until }) : t('signing-verify.sent', { address });
    coolDown(Number(result.body?.retryAfterSeconds ?? 30));
    // Entering the code is the next step now: it gets the primary button.
    send.classList.replace('primary', 'secondary');
    confirm.classList.replace('secondary', 'primary');
    input.focus();
  });

  return new Promise((resolve) => {
    let busy = false;
    const check = async () => {
      if (busy) return;
      const code = input.value.replace(/\s+/g, '');
      if (!/^\d{4,10}$/.test(code)) {
        input.focus();
        return fail(t('signing-verify.digitsOnly'));
      }
      busy = true;
      confirm.disabled = true;
      error.textContent = '';
      let result;
      try {
        result = await call(urls.confirm, { method: 'POST', body: { code } });
      } catch {
        busy = false;
        confirm.disabled = false;
        return fail(t('signing-verify.offlineCheck'));
      }
      busy = false;
      confirm.disabled = false;
      if (result.ok && result.body?.verified) {
        clearInterval(cooldown);
        input.removeAttribute('aria-invalid');
        step.hidden = true;
        return resolve();
      }
      const left = result.body?.attemptsLeft;
      // The server's message says how many attempts are left (INVALID_CODE) or why no code can work.
      const message = problem(result, 'signing-verify.notChecked');
      if (left === 0 || result.body?.code === 'VERIFICATION_FAILED' || result.body?.code === 'VERIFICATION_EXPIRED') {
        // Locked: no code can confirm this address any more, so nothing on this page is of use.
        input.disabled = true;
        confirm.disabled = true;
        send.disabled = true;
        clearInterval(cooldown);
        return fail(t('signing-verify.askAgain', { message }));
      }
      input.select();
      fail(message);
    };
    confirm.addEventListener('click', check);
    input.addEventListener('keydown', (e) => {
      if (e.key === 'Enter') check();
    });
    input.addEventListener('input', () => input.removeAttribute('aria-invalid'));
  });
}
