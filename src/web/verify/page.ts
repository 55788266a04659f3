import { escapeHtml } from '../html.js';
import { loadPublicPageAssets, publicPageHead } from '../public-page.js';
import type { PageAssets } from '../static-assets.js';

/**
 * The identity verification page (GET /verify/<token>): server-rendered in the state the verification
 * is in, with one small client script that asks for a code and checks it through the JSON routes
 * beside it. URLs are relative to /verify/<token>, so the page works behind a path prefix.
 */

/** The page's client script and stylesheet, with public.css; read once at start. */
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
};

const panel = (name: VerifyPageState, current: VerifyPageState, body: string) =>
  `<section class="panel" data-panel="${name}" data-testid="panel-${name}"${name === current ? '' : ' hidden'}>\n${body}\n</section>`;

export function renderVerifyPage(o: VerifyPageOptions): string {
  const token = escapeHtml(o.token);
  const to = `<strong class="address" data-testid="sent-to">${escapeHtml(o.sentTo)}</strong>`;
  const hello = o.name ? `<p class="hello">Hello ${escapeHtml(o.name)},</p>` : '';
  const redirect = o.redirectUrl ? escapeHtml(o.redirectUrl) : '';
  const attempts = o.attemptsLeft < 5 ? `${o.attemptsLeft} ${o.attemptsLeft === 1 ? 'attempt' : 'attempts'} left. ` : '';
  return `${publicPageHead({ title: 'Verify your email address', assets: `assets/${o.assetPrefix}`, stylesheet: 'verify.css', script: 'verify.js', noindex: true })}
<body>
<main id="verify-app" class="card" data-state="${o.state}" data-code-url="${token}/code" data-confirm-url="${token}/confirm" data-redirect-url="${redirect}" data-testid="verify-app">
<p class="brand">Signet</p>
${panel(
  'ask',
  o.state,
  `<h1>Verify your email address</h1>
${hello}
<p>We will send a 6-digit code to ${to}. Enter it on this page to confirm that the address is yours.</p>
<button type="button" class="button primary" data-action="send-code" data-testid="send-code">Email me a code</button>`,
)}
${panel(
  'enter',
  o.state,
  `<h1>Enter your code</h1>
<p>We sent a 6-digit code to ${to}. It is valid for 10 minutes.</p>
<form id="code-form" class="code-form" novalidate>
<label for="code-input" class="label">Verification code</label>
<div class="code-row">
<input id="code-input" class="input code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="7" placeholder="123456" aria-describedby="verify-error" data-testid="code-input">
<button type="submit" class="button primary" data-testid="confirm-code">Verify</button>
</div>
</form>
<p class="hint"><span id="attempts" data-testid="attempts">${attempts}</span>Did not get it? Check your spam folder.</p>
<p class="resend"><button type="button" class="button link" data-action="send-code" data-testid="resend-code">Send a new code</button></p>`,
)}
${panel(
  'verified',
  o.state,
  `<h1>Email address verified</h1>
<p class="success">Thank you: ${to} is confirmed. You can close this page.</p>
${o.redirectUrl ? `<p><a class="button primary" href="${redirect}" data-testid="continue">Continue</a></p>` : ''}`,
)}
${panel('failed', o.state, `<h1>Verification failed</h1>\n<p>Too many wrong codes were entered, so this link no longer works. Ask whoever sent it for a new one.</p>`)}
${panel('expired', o.state, `<h1>This link has expired</h1>\n<p>The verification was not completed in time. Ask whoever sent it for a new one.</p>`)}
${panel('canceled', o.state, `<h1>This verification was canceled</h1>\n<p>Its sender canceled it; there is nothing to do here.</p>`)}
<p id="verify-info" class="info" role="status" aria-live="polite" data-testid="verify-info" hidden></p>
<p id="verify-error" class="error" role="alert" data-testid="verify-error" hidden></p>
<noscript><p class="error">This page needs JavaScript to send and check your code.</p></noscript>
</main>
</body>
</html>
`;
}

/** A link whose token cannot be ours, or that names no verification. */
export function renderInvalidVerifyLinkPage(assetPrefix: string): string {
  return `${publicPageHead({ title: 'Link not valid', assets: `assets/${assetPrefix}`, stylesheet: 'verify.css', noindex: true })}
<body>
<main class="card" data-testid="verify-invalid">
<p class="brand">Signet</p>
<h1>This verification link is not valid</h1>
<p>Check that you copied the whole link, or ask whoever sent it for a new one.</p>
</main>
</body>
</html>
`;
}
