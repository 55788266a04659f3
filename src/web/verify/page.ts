import { t } from '../../i18n/catalogue.js';
import { DEFAULT_LOCALE, type Locale } from '../../i18n/locales.js';
import { escapeHtml } from '../html.js';
import { languageSwitch, loadPublicPageAssets, messagesBlock, publicPageHead, withHtml } from '../public-page.js';
import type { PageAssets } from '../static-assets.js';

/**
 * The identity verification page (GET /verify/<token>): server-rendered in the state the verification
 * is in, with one small client script that asks for a code and checks it through the JSON routes
 * beside it. URLs are relative to /verify/<token>, so the page works behind a path prefix. Every word
 * is the catalogue's (namespace `verify`), in the page's language; the script formats its own messages
 * from the same namespace, embedded in #signet-messages.
 */

/** The page's client script and stylesheet, with public.css and the message modules; read once at start. */
export const loadVerifyAssets = (): PageAssets => loadPublicPageAssets(new URL('./assets/', import.meta.url));

export type VerifyPageState = 'ask' | 'enter' | 'verified' | 'failed' | 'expired' | 'canceled';

export type VerifyPageOptions = {
  /** The token from the path; the caller has checked it is URL-safe. */
  token: string;
  /** `app-<hash>`, the versioned asset folder under /verify/assets/. */
  assetPrefix: string;
  state: VerifyPageState;
  /** The address, masked (m***@example.com). */
  sentTo: string;
  name: string | null;
  attemptsLeft: number;
  redirectUrl: string | null;
  /** The page's language (`?lang=`, else Accept-Language, else English). */
  locale?: Locale;
};

const panel = (name: VerifyPageState, current: VerifyPageState, body: string) =>
  `<section class="panel" data-panel="${name}" data-testid="panel-${name}"${name === current ? '' : ' hidden'}>\n${body}\n</section>`;

export function renderVerifyPage(o: VerifyPageOptions): string {
  const locale = o.locale ?? DEFAULT_LOCALE;
  const say = (key: string, values?: Record<string, string | number>) => escapeHtml(t(locale, `verify.${key}`, values));
  const token = escapeHtml(o.token);
  const address = { address: `<strong class="address" data-testid="sent-to">${escapeHtml(o.sentTo)}</strong>` };
  const hello = o.name ? `<p class="hello">${say('hello', { name: o.name })}</p>` : '';
  const redirect = o.redirectUrl ? escapeHtml(o.redirectUrl) : '';
  const attempts = o.attemptsLeft < 5 ? `${say('attemptsLeft', { count: o.attemptsLeft })} ` : '';
  return `${publicPageHead({ title: t(locale, 'verify.title'), assets: `assets/${o.assetPrefix}`, stylesheet: 'verify.css', script: 'verify.js', noindex: true, locale })}
<body>
${messagesBlock(locale, 'verify.')}
<main id="verify-app" class="card" data-state="${o.state}" data-code-url="${token}/code" data-confirm-url="${token}/confirm" data-redirect-url="${redirect}" data-testid="verify-app">
<p class="brand">Signet</p>
${panel(
  'ask',
  o.state,
  `<h1>${say('title')}</h1>
${hello}
<p>${withHtml(locale, 'verify.askText', {}, address)}</p>
<button type="button" class="button primary" data-action="send-code" data-testid="send-code">${say('sendCode')}</button>`,
)}
${panel(
  'enter',
  o.state,
  `<h1>${say('enterTitle')}</h1>
<p>${withHtml(locale, 'verify.enterText', { minutes: 10 }, address)}</p>
<form id="code-form" class="code-form" novalidate>
<label for="code-input" class="label">${say('codeLabel')}</label>
<div class="code-row">
<input id="code-input" class="input code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="7" placeholder="123456" dir="ltr" aria-describedby="verify-error" data-testid="code-input">
<button type="submit" class="button primary" data-testid="confirm-code">${say('verify')}</button>
</div>
</form>
<p class="hint"><span id="attempts" data-testid="attempts">${attempts}</span>${say('spam')}</p>
<p class="resend"><button type="button" class="button link" data-action="send-code" data-testid="resend-code">${say('resend')}</button></p>`,
)}
${panel(
  'verified',
  o.state,
  `<h1>${say('verifiedTitle')}</h1>
<p class="success">${withHtml(locale, 'verify.verifiedText', {}, address)}</p>
${o.redirectUrl ? `<p><a class="button primary" href="${redirect}" data-testid="continue">${say('continue')}</a></p>` : ''}`,
)}
${panel('failed', o.state, `<h1>${say('failedTitle')}</h1>\n<p>${say('failedText')}</p>`)}
${panel('expired', o.state, `<h1>${say('expiredTitle')}</h1>\n<p>${say('expiredText')}</p>`)}
${panel('canceled', o.state, `<h1>${say('canceledTitle')}</h1>\n<p>${say('canceledText')}</p>`)}
<p id="verify-info" class="info" role="status" aria-live="polite" data-testid="verify-info" hidden></p>
<p id="verify-error" class="error" role="alert" data-testid="verify-error" hidden></p>
<noscript><p class="error">${say('noscript')}</p></noscript>
${languageSwitch(locale, t(locale, 'verify.languages'))}
</main>
</body>
</html>
`;
}

/** A link whose token cannot be ours, or that names no verification. */
export function renderInvalidVerifyLinkPage(assetPrefix: string, locale: Locale = DEFAULT_LOCALE): string {
  const say = (key: string) => escapeHtml(t(locale, `verify.${key}`));
  return `${publicPageHead({ title: t(locale, 'verify.invalidPageTitle'), assets: `assets/${assetPrefix}`, stylesheet: 'verify.css', noindex: true, locale })}
<body>
<main class="card" data-testid="verify-invalid">
<p class="brand">Signet</p>
<h1>${say('invalidTitle')}</h1>
<p>${say('invalidText')}</p>
${languageSwitch(locale, t(locale, 'verify.languages'))}
</main>
</body>
</html>
`;
}
