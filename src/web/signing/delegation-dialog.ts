/**
 * "I am not the right person" on the signing page: the offer (under who asks, shown by delegation.js
 * when the session allows it) and its small form, in the recipient's language (signing-delegation).
 */
import { t } from '../../i18n/catalogue.js';
import type { Locale } from '../../i18n/locales.js';
import { escapeHtml } from '../html.js';

/** `token`: the page's relative token path (root + token), already escaped by the caller. */
export function renderDelegation(locale: Locale, token: string): string {
  const m = (key: string) => escapeHtml(t(locale, `signing-delegation.${key}`));
  return `<section id="delegate-offer" class="delegate-offer" data-delegate-url="${token}/delegate" data-testid="delegate-offer" hidden>
    <button type="button" id="delegate-button" class="button link" aria-label="${m('offerLabel')}" data-testid="delegate-button">${m('offer')}</button>
  </section>
  <dialog id="delegate-dialog" class="dialog" aria-labelledby="delegate-dialog-title" aria-describedby="delegate-dialog-help" data-testid="delegate-dialog">
    <h2 id="delegate-dialog-title">${m('title')}</h2>
    <p id="delegate-dialog-help" class="help">${m('help')}</p>
    <form id="delegate-form" class="delegate-form" novalidate>
      <label for="delegate-name" class="label">${m('name')}</label>
      <input id="delegate-name" class="input" type="text" maxlength="200" autocomplete="off" aria-label="${m('name')}" aria-required="true" aria-describedby="delegate-error" data-testid="delegate-name">
      <label for="delegate-email" class="label">${m('email')}</label>
      <input id="delegate-email" class="input" type="email" maxlength="320" autocomplete="off" aria-label="${m('email')}" aria-required="true" aria-describedby="delegate-error" data-testid="delegate-email">
      <label for="delegate-reason" class="label">${m('reason')}</label>
      <textarea id="delegate-reason" class="input" rows="3" maxlength="500" aria-label="${m('reason')}" data-testid="delegate-reason"></textarea>
      <p id="delegate-error" class="error" role="alert" data-testid="delegate-error"></p>
      <div class="dialog-actions">
        <button type="button" id="delegate-cancel" class="button secondary" aria-label="${m('cancel')}" data-testid="delegate-cancel">${m('cancel')}</button>
        <button type="submit" id="delegate-confirm" class="button primary" aria-label="${m('submit')}" data-testid="delegate-confirm">${m('submit')}</button>
      </div>
    </form>
  </dialog>`;
}
