// The verification page's client: asks for a code and checks it through the JSON routes beside the page
// (relative URLs: <token>/code and <token>/confirm). The server rendered the starting state; this script
// only switches panels and shows messages. No inline script or style: the CSP forbids both. Every
// message is the catalogue's (namespace verify), formatted by the signing page's i18n.js.
import { t } from './i18n.js';

const app = document.getElementById('verify-app');
const info = document.getElementById('verify-info');
const error = document.getElementById('verify-error');
const input = document.getElementById('code-input');
const form = document.getElementById('code-form');
const attempts = document.getElementById('attempts');
const senders = [...document.querySelectorAll('[data-action="send-code"]')];
const redirectUrl = app.dataset.redirectUrl || '';

let cooldownTimer;

function show(state) {
  app.dataset.state = state;
  for (const panel of app.querySelectorAll('[data-panel]')) panel.hidden = panel.dataset.panel !== state;
  if (state !== 'ask' && state !== 'enter') setMessage(info, '');
}

function setMessage(el, text) {
  el.textContent = text;
  el.hidden = text === '';
}

/** The resend link waits as long as the server says; the server enforces it either way. */
function cooldown(seconds) {
  clearInterval(cooldownTimer);
  const resend = document.querySelector('[data-testid="resend-code"]');
  let left = Math.max(0, Math.ceil(seconds));
  const tick = () => {
    resend.disabled = left > 0;
    resend.textContent = left > 0 ? t('verify.resendIn', { seconds: left }) : t('verify.resend');
    if (left-- <= 0) clearInterval(cooldownTimer);
  };
  tick();
  cooldownTimer = setInterval(tick, 1000);
}

async function post(url, body) {
  const res = await fetch(url, {
    method: 'POST',
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
    credentials: 'omit',
  });
  let data = {};
  try {
    data = await res.json();
  } catch {
    // A proxy's HTML error page: the generic message below covers it.
  }
  return { ok: res.ok, data };
}

/** Every refusal the routes answer with, in words a person can act on. */
function refused(data) {
  switch (data.code) {
    case 'INVALID_CODE':
      // The error says how many are left; the server-rendered note would only repeat it.
      attempts.textContent = '';
      input.select();
      return setMessage(error, t('verify.wrongCode', { count: data.attemptsLeft }));
    case 'CODE_EXPIRED':
      return setMessage(error, t('verify.codeExpired'));
    case 'CODE_RATE_LIMITED':
      cooldown(data.retryAfterSeconds);
      return setMessage(error, t('verify.rateLimited', { seconds: data.retryAfterSeconds }));
    case 'VALIDATION_ERROR':
      return setMessage(error, t('verify.enterDigits'));
    case 'VERIFICATION_FAILED':
      return show('failed');
    case 'VERIFICATION_EXPIRED':
      return show('expired');
    case 'VERIFICATION_NOT_PENDING':
      return show(data.status === 'verified' ? 'verified' : 'canceled');
    case 'VERIFICATION_LINK_INVALID':
      return setMessage(error, t('verify.linkInvalid'));
    default:
      return setMessage(error, t('verify.generic'));
  }
}

async function sendCode(event) {
  const button = event.currentTarget;
  button.disabled = true;
  setMessage(error, '');
  try {
    const { ok, data } = await post(app.dataset.codeUrl);
    if (!ok) return refused(data);
    for (const el of app.querySelectorAll('[data-testid="sent-to"]')) el.textContent = data.sentTo;
    const resent = app.dataset.state === 'enter';
    show('enter');
    // The panel already says where the first code went; a resend gets its own confirmation.
    setMessage(info, resent ? t('verify.newCodeSent', { address: data.sentTo }) : '');
    cooldown(data.retryAfterSeconds);
    input.value = '';
    input.focus();
  } catch {
    setMessage(error, t('verify.offline'));
  } finally {
    if (button.dataset.testid === 'send-code') button.disabled = false;
  }
}

async function confirm(event) {
  event.preventDefault();
  const code = input.value.replace(/[\s-]/g, '');
  if (!/^\d{6}$/.test(code)) return setMessage(error, t('verify.enterDigits'));
  const submit = form.querySelector('button[type="submit"]');
  submit.disabled = true;
  setMessage(error, '');
  setMessage(info, '');
  try {
    const { ok, data } = await post(app.dataset.confirmUrl, { code });
    if (!ok) return refused(data);
    show('verified');
    if (redirectUrl) {
      setMessage(info, t('verify.returning'));
      setTimeout(() => window.location.assign(redirectUrl), 1500);
    }
  } catch {
    setMessage(error, t('verify.offline'));
  } finally {
    submit.disabled = false;
  }
}

for (const button of senders) button.addEventListener('click', sendCode);
form.addEventListener('submit', confirm);
app.dataset.ready = 'true';
