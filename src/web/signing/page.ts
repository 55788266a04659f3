/**
 * The recipient signing page: a static HTML shell. It reads nothing from the database; the client
 * script fetches `<token>/session` and renders everything else, so the page itself can be cached by
 * nobody and costs nothing to serve. All URLs are relative to /sign/<token>, which keeps the page
 * working behind a proxy that mounts Signet under a path prefix.
 */
import { messagesFor, messagesJson, t, type MessageValues } from '../../i18n/catalogue.js';
import { DEFAULT_LOCALE, type Locale, textDirection } from '../../i18n/locales.js';
import { escapeHtml, pageHead } from '../html.js';
import { renderDelegation } from './delegation-dialog.js';

/** The catalogue namespaces the page's script formats (signing.json, signing-<feature>.json…). */
export const SIGNING_PAGE_MESSAGES = ['signing'];

/**
 * Content-Security-Policy of the page: scripts and the pdf.js worker from our origin only, no inline
 * script or style, images from our origin or data:/blob: URLs (signature previews), fetches to our origin
 * only, and no framing (a signing page inside someone else's frame is a clickjacking target).
 */
export const SIGNING_PAGE_CSP = {
  'default-src': ["'none'"],
  'script-src': ["'self'"],
  'worker-src': ["'self'"],
  'connect-src': ["'self'"],
  'img-src': ["'self'", 'data:', 'blob:'],
  'style-src': ["'self'"],
  'font-src': ["'self'", 'data:'],
  'base-uri': ["'none'"],
  'form-action': ["'none'"],
  'frame-ancestors': ["'none'"],
  'object-src': ["'none'"],
} as const;

/**
 * CSP sent with the static files. Browsers apply it only to the pdf.js worker (a worker runs under its own
 * script's policy): it may fetch its data files from our origin and compile the wasm image decoders.
 */
export const SIGNING_ASSET_CSP = {
  'default-src': ["'none'"],
  'script-src': ["'self'", "'wasm-unsafe-eval'"],
  'connect-src': ["'self'"],
} as const;

export type SigningPageOptions = {
  /** The token from the path; the caller has checked it is URL-safe. */
  token: string;
  /** `app-<hash>` and `pdfjs-<version>`, the versioned asset folders under /sign/assets/. */
  appPrefix: string;
  pdfjsPrefix: string;
  /** Prefix of every relative URL: '' at /sign/<token>, '../' for the embed page at /sign/embed/<token>. */
  root?: string;
  /** An embed link's page: where its events go (embed-events.js) and whom they name. */
  embed?: { origins: string[]; envelopeId: string; recipientId: number };
  /** The recipient's language (default English). */
  locale?: Locale;
};

/** The page's policy with framing allowed for `origins` only (an embed link's page); none: no framing. */
export function signingPageCsp(origins: string[]): Record<string, readonly string[]> {
  return { ...SIGNING_PAGE_CSP, 'frame-ancestors': origins.length ? origins : ["'none'"] };
}

export function renderSigningPage(o: SigningPageOptions): string {
  const root = o.root ?? '';
  const pdfjs = `${root}assets/${escapeHtml(o.pdfjsPrefix)}`;
  const token = escapeHtml(root + o.token);
  const embed = o.embed
    ? ` data-embed-origins="${escapeHtml(o.embed.origins.join(' '))}" data-envelope-id="${escapeHtml(o.embed.envelopeId)}" data-recipient-id="${o.embed.recipientId}"`
    : '';
  const locale = o.locale ?? DEFAULT_LOCALE;
  const m = (key: string, values?: MessageValues) => escapeHtml(t(locale, `signing.${key}`, values));
  const head = pageHead({
    lang: locale,
    dir: textDirection(locale),
    title: t(locale, 'signing.pageTitle'),
    // brand.css: the account's accent (a stylesheet of ours, as style-src 'self' wants; no inline style).
    stylesheets: [`${root}assets/${o.appPrefix}/signing.css`, `${token}/brand.css`],
    modulepreload: [`${root}assets/${o.pdfjsPrefix}/pdf.min.mjs`],
    script: `${root}assets/${o.appPrefix}/signing.js`,
    noindex: true,
  });
  return `${head}
<body>
<script type="application/json" id="signet-messages">${messagesJson(messagesFor(locale, SIGNING_PAGE_MESSAGES))}</script>
<div id="signing-app" class="app" data-session-url="${token}/session" data-complete-url="${token}/complete" data-reject-url="${token}/reject" data-consent-url="${token}/consent" data-code-url="${token}/verification/code" data-confirm-url="${token}/verification/confirm" data-attachments-url="${token}/attachments" data-pdfjs-base="${pdfjs}/" data-brand-base="${escapeHtml(root)}../brand/"${embed}>
  <header class="topbar">
    <img id="brand-logo" class="brand-logo" alt="" data-testid="brand-logo" hidden>
    <p class="brand">Signet</p>
    <h1 id="document-title" class="title" data-testid="document-title">${m('loadingTitle')}</h1>
    <p id="recipient-line" class="recipient" data-testid="recipient-line"></p>
  </header>

  <section id="request-info" class="request" aria-label="${m('requestInfoLabel')}" data-testid="request-info" hidden>
    <p id="sender-line" class="sender" data-testid="sender-line"></p>
    <blockquote id="sender-message" class="message" data-testid="sender-message" hidden></blockquote>
    <p id="deadline-line" class="deadline" data-testid="deadline-line" hidden></p>
  </section>

  ${renderDelegation(locale, token)}

  <div id="status-banner" class="banner" role="status" aria-live="polite" data-testid="status-banner" hidden></div>

  <section id="consent-step" class="verify consent" aria-labelledby="consent-title" data-testid="consent-step" hidden>
    <h2 id="consent-title" tabindex="-1">${m('consentTitle')}</h2>
    <p class="help">${m('consentHelp')}</p>
    <div id="consent-text" class="consent-text" tabindex="0" role="region" aria-label="${m('consentTextLabel')}" data-testid="consent-text"></div>
    <form id="consent-form" class="consent-form" novalidate>
      <div class="check-row">
        <input id="consent-check" type="checkbox" aria-label="${m('consentCheck')}" aria-describedby="consent-error" data-testid="consent-check">
        <label for="consent-check">${m('consentCheck')}</label>
      </div>
      <p id="consent-error" class="error" role="alert" aria-live="assertive" data-testid="consent-error"></p>
      <div class="dialog-actions">
        <button type="button" id="consent-decline" class="button danger-outline" aria-label="${m('declineLabel')}" data-testid="consent-decline">${m('declineToSign')}</button>
        <button type="submit" id="consent-submit" class="button primary" aria-label="${m('consentSubmitLabel')}" data-testid="consent-submit">${m('consentSubmit')}</button>
      </div>
    </form>
  </section>

  <section id="verify-step" class="verify" aria-labelledby="verify-title" data-testid="verify-step" hidden>
    <h2 id="verify-title">${m('verifyTitle')}</h2>
    <p class="help">${m('verifyHelp', { address: SLOT }).replace(SLOT_HTML, '<strong id="verify-address" data-testid="verify-address"></strong>')}</p>
    <button type="button" id="verify-send" class="button primary" aria-label="${m('verifySendLabel')}" data-testid="verify-send">${m('verifySend')}</button>
    <p id="verify-sent" class="sent" role="status" aria-live="polite" data-testid="verify-sent" hidden></p>
    <label for="verify-code" class="label">${m('verifyCode')}</label>
    <div class="code-row">
      <input id="verify-code" class="input code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9]*" maxlength="6" spellcheck="false" aria-label="${m('verifyCodeLabel')}" aria-describedby="verify-error" data-testid="verify-code">
      <button type="button" id="verify-confirm" class="button secondary" aria-label="${m('verifyConfirmLabel')}" data-testid="verify-confirm">${m('verifyConfirm')}</button>
    </div>
    <p id="verify-error" class="error" role="alert" data-testid="verify-error"></p>
  </section>

  <!-- Before the document in reading and Tab order (Start is the first stop after the header), shown
       at the bottom of the screen by CSS. -->
  <section id="action-bar" class="actionbar" aria-label="${m('actionsLabel')}" data-testid="action-bar" hidden>
    <div class="status-row">
      <p id="progress" class="progress" role="status" aria-live="polite" data-testid="progress" hidden></p>
      <button type="button" id="zoom-reset" class="button link" aria-label="${m('zoomResetLabel')}" data-testid="zoom-reset" hidden>${m('zoomReset')}</button>
    </div>
    <p id="guide-help" class="sr-only">${m('guideHelp')}</p>
    <div class="actions">
      <button type="button" id="next-field-button" class="button secondary" data-testid="next-field-button" aria-label="${m('startLabel')}" aria-describedby="guide-help" hidden>${m('start')}</button>
      <button type="button" id="reject-button" class="button danger-outline" data-testid="reject-button" aria-label="${m('declineLabel')}" hidden>${m('decline')}</button>
      <button type="button" id="finish-button" class="button primary" data-testid="finish-button" aria-label="${m('finishLabel')}" hidden>${m('finish')}</button>
    </div>
  </section>

  <main id="document" class="document" aria-label="${m('documentLabel')}" aria-busy="true" data-testid="document">
    <p id="document-loading" class="loading" data-testid="document-loading">${m('loadingDocument')}</p>
  </main>

  <dialog id="signature-dialog" class="dialog" aria-labelledby="signature-dialog-title" aria-describedby="signature-dialog-help" data-testid="signature-dialog">
    <h2 id="signature-dialog-title">${m('sigTitle')}</h2>
    <p id="signature-dialog-help" class="help">${m('sigHelp')}</p>
    <div class="tabs" role="tablist" aria-label="${m('sigTabsLabel')}">
      <button type="button" role="tab" id="signature-tab-draw" class="tab" aria-selected="true" aria-controls="signature-panel-draw" aria-label="${m('sigDrawLabel')}" data-testid="signature-tab-draw">${m('sigDraw')}</button>
      <button type="button" role="tab" id="signature-tab-type" class="tab" aria-selected="false" aria-controls="signature-panel-type" aria-label="${m('sigTypeLabel')}" tabindex="-1" data-testid="signature-tab-type">${m('sigType')}</button>
      <button type="button" role="tab" id="signature-tab-upload" class="tab" aria-selected="false" aria-controls="signature-panel-upload" aria-label="${m('sigUploadLabel')}" tabindex="-1" data-testid="signature-tab-upload">${m('sigUpload')}</button>
    </div>
    <div role="tabpanel" id="signature-panel-draw" class="panel" aria-labelledby="signature-tab-draw" data-testid="signature-panel-draw">
      <canvas id="signature-draw-canvas" class="pad" role="img" aria-label="${m('sigDrawArea')}" data-testid="signature-draw-canvas"></canvas>
      <div class="panel-actions">
        <span class="hint">${m('sigDrawHint')}</span>
        <button type="button" id="signature-draw-clear" class="button link" aria-label="${m('sigClearLabel')}" data-testid="signature-draw-clear">${m('sigClear')}</button>
      </div>
    </div>
    <div role="tabpanel" id="signature-panel-type" class="panel" aria-labelledby="signature-tab-type" data-testid="signature-panel-type" hidden>
      <label for="signature-type-input" class="label">${m('sigTypeName')}</label>
      <input id="signature-type-input" class="input" type="text" maxlength="80" autocomplete="name" aria-label="${m('sigTypeLabel')}" data-testid="signature-type-input">
      <canvas id="signature-type-preview" class="pad preview" role="img" aria-label="${m('sigTypePreview')}" data-testid="signature-type-preview"></canvas>
    </div>
    <div role="tabpanel" id="signature-panel-upload" class="panel" aria-labelledby="signature-tab-upload" data-testid="signature-panel-upload" hidden>
      <label for="signature-upload-input" class="label">${m('sigUploadHint')}</label>
      <input id="signature-upload-input" class="input" type="file" accept="image/png,image/jpeg" aria-label="${m('sigUploadLabel')}" data-testid="signature-upload-input">
      <img id="signature-upload-preview" class="pad preview" alt="${m('sigUploadPreview')}" data-testid="signature-upload-preview" hidden>
    </div>
    <p id="signature-error" class="error" role="alert" data-testid="signature-error"></p>
    <div class="dialog-actions">
      <button type="button" id="signature-cancel" class="button secondary" aria-label="${m('cancelLabel')}" data-testid="signature-cancel">${m('cancel')}</button>
      <button type="button" id="signature-apply" class="button primary" aria-label="${m('sigApplyLabel')}" data-testid="signature-apply">${m('sigApply')}</button>
    </div>
  </dialog>

  <dialog id="reject-dialog" class="dialog" aria-labelledby="reject-dialog-title" aria-describedby="reject-dialog-help" data-testid="reject-dialog">
    <h2 id="reject-dialog-title">${m('declineToSign')}</h2>
    <p id="reject-dialog-help" class="help">${m('rejectHelp')}</p>
    <label for="reject-reason" class="label">${m('rejectReason')}</label>
    <textarea id="reject-reason" class="input" rows="4" maxlength="1000" aria-label="${m('rejectReasonLabel')}" aria-required="true" data-testid="reject-reason"></textarea>
    <p id="reject-error" class="error" role="alert" data-testid="reject-error"></p>
    <div class="dialog-actions">
      <button type="button" id="reject-cancel" class="button secondary" aria-label="${m('cancelLabel')}" data-testid="reject-cancel">${m('cancel')}</button>
      <button type="button" id="reject-confirm" class="button danger" aria-label="${m('declineToSign')}" data-testid="reject-confirm">${m('decline')}</button>
    </div>
  </dialog>

  <noscript><p class="banner error-banner">${m('noscript')}</p></noscript>
</div>
</body>
</html>
`;
}

/** Where a message's argument goes when the page puts markup there (escapeHtml leaves it as it is). */
const SLOT = '\u2063';
const SLOT_HTML = SLOT;

/** A link whose token cannot be one of ours: answered without the client script, in the browser's language. */
export function renderInvalidLinkPage(locale: Locale = DEFAULT_LOCALE): string {
  const m = (key: string) => escapeHtml(t(locale, `signing.${key}`));
  return `<!doctype html>
<html lang="${escapeHtml(locale)}"${textDirection(locale) === 'rtl' ? ' dir="rtl"' : ''}>
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="robots" content="noindex, nofollow">
<title>${m('invalidTitle')}</title>
</head>
<body>
<main>
<h1>${m('invalidHeading')}</h1>
<p>${m('invalidHelp')}</p>
</main>
</body>
</html>
`;
}
