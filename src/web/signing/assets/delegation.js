// "I am not the right person": a recipient whose envelope allows it hands the document to someone else
// (name, email, optional reason). The delegate gets their own link; this one stops working, so after a
// hand-over the page shows only what happened.
import { t } from './i18n.js';

const $ = (id) => document.getElementById(id);
const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

/** Why the server refused, in the recipient's words. */
function refusal(result) {
  switch (result.body?.code) {
    case 'RECIPIENT_EMAIL_TAKEN':
      return t('signing-delegation.emailTaken');
    case 'HANDOVER_LIMIT_REACHED':
      return t('signing-delegation.limitReached');
    case 'DELEGATION_NOT_ALLOWED':
    case 'ALREADY_ACTED':
    case 'ENVELOPE_NOT_ACTIVE':
      return t('signing-delegation.notAllowed');
    case 'VALIDATION_ERROR':
      return t('signing-delegation.emailInvalid');
    default:
      return t('signing-delegation.failed');
  }
}

/**
 * Shows the offer when the session allows a hand-over. `call` posts JSON (signing.js); `say` writes the
 * status banner; `done` runs after a hand-over (the page locks itself).
 */
export function offerDelegation(session, { call, say, done }) {
  const offer = $('delegate-offer');
  if (!offer || !session.delegation?.allowed) return;
  const dialog = $('delegate-dialog');
  const name = $('delegate-name');
  const email = $('delegate-email');
  const reason = $('delegate-reason');
  const error = $('delegate-error');
  const confirm = $('delegate-confirm');
  const target = new URL(offer.dataset.delegateUrl, location.href).href;
  offer.hidden = false;

  const invalid = (input, text) => {
    error.textContent = text;
    input.setAttribute('aria-invalid', 'true');
    input.focus();
  };

  // A corrected entry clears the message about it.
  for (const input of [name, email]) {
    input.addEventListener('input', () => {
      input.removeAttribute('aria-invalid');
      error.textContent = '';
    });
  }

  $('delegate-button').addEventListener('click', () => {
    error.textContent = '';
    dialog.showModal();
    name.focus();
  });
  $('delegate-cancel').addEventListener('click', () => dialog.close());
  dialog.addEventListener('close', () => {
    if (!offer.hidden) $('delegate-button').focus();
  });
  $('delegate-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    for (const input of [name, email]) input.removeAttribute('aria-invalid');
    const body = { name: name.value.trim(), email: email.value.trim() };
    if (!body.name) return invalid(name, t('signing-delegation.nameRequired'));
    if (!EMAIL.test(body.email)) return invalid(email, t('signing-delegation.emailInvalid'));
    if (reason.value.trim()) body.reason = reason.value.trim();
    confirm.disabled = true;
    error.textContent = t('signing-delegation.sending');
    let result;
    try {
      result = await call(target, { method: 'POST', body });
    } catch {
      confirm.disabled = false;
      error.textContent = t('signing-delegation.offline');
      return;
    }
    confirm.disabled = false;
    if (!result.ok) {
      error.textContent = refusal(result);
      return;
    }
    offer.hidden = true;
    dialog.close();
    done();
    const to = result.body.to;
    say('success', t(result.body.invitationSent ? 'signing-delegation.done' : 'signing-delegation.doneLater', { name: to.name, email: to.email }));
  });
}
