/**
 * The sign-in pages: the sign-in form (an OpenID Connect button or the email form), "check your
 * email", the confirm page behind an emailed link, and the sign-in errors. Bodies only; the layout
 * wraps them. Every value is escaped here.
 */
import { csrfField, escapeHtml } from './layout.js';

const SIGN_IN = '/dashboard/sign-in';

const signInHref = (returnTo: string) => (returnTo === '/dashboard' ? SIGN_IN : `${SIGN_IN}?returnTo=${encodeURIComponent(returnTo)}`);

export type SignInPageInput = {
  csrf: string;
  /** Where to land afterwards (already checked by safeReturnTo). */
  returnTo: string;
  /** Set when OpenID Connect is configured: the provider's name. */
  oidcName?: string;
  /** The email form, when OpenID Connect is not configured. */
  emailForm: boolean;
  /** The address typed before, and why it was refused. */
  email?: string;
  error?: string;
};

export function signInPage(p: SignInPageInput): string {
  const oidc = p.oidcName
    ? `<a href="/dashboard/sign-in/oidc?returnTo=${encodeURIComponent(p.returnTo)}" role="button" class="wide" data-testid="oidc-sign-in">Sign in with ${escapeHtml(p.oidcName)}</a>`
    : '';
  const error = p.error ? `<small id="email-error" class="field-error" role="alert">${escapeHtml(p.error)}</small>` : '';
  const form = p.emailForm
    ? `<form method="post" action="/dashboard/sign-in/email" novalidate>
${csrfField(p.csrf)}
<input type="hidden" name="returnTo" value="${escapeHtml(p.returnTo)}">
<label for="email">Email address
<input type="email" id="email" name="email" autocomplete="email" inputmode="email" required maxlength="254" placeholder="you@example.com" value="${escapeHtml(p.email ?? '')}"${p.error ? ' aria-invalid="true" aria-describedby="email-error"' : ''} autofocus>
${error}
</label>
<button type="submit" class="wide">Email me a sign-in link</button>
</form>
<p><small>We email you a link that signs you in. It works once, for 15 minutes. No password to remember.</small></p>`
    : '';
  return `<article class="auth-card">
<hgroup><h1>Sign in to Signet</h1><p>New here? Your first sign-in creates your account.</p></hgroup>
${oidc}
${form}
</article>`;
}

export function checkEmailPage(p: { sentTo: string; returnTo: string; outboxDir?: string }): string {
  // Without SMTP_URL nothing is mailed: a developer on their own machine finds the link in a file.
  const outbox = p.outboxDir
    ? `\n<p class="outbox-hint" data-testid="outbox-hint"><strong>No SMTP server is configured</strong> (SMTP_URL), so the email was written as an .eml file to <code>${escapeHtml(p.outboxDir)}</code> on the server: open the newest file there and follow the link.</p>`
    : '';
  return `<article class="auth-card" aria-labelledby="check-title">
<hgroup><h1 id="check-title">Check your email</h1><p>We sent a sign-in link to <strong data-testid="sent-to">${escapeHtml(p.sentTo)}</strong>.</p></hgroup>${outbox}
<p>Open it on this device or another one. The link works once and expires in 15 minutes.</p>
<p><small>Nothing after a few minutes? Look in your spam folder, check the address, or <a href="${escapeHtml(signInHref(p.returnTo))}">ask for a new link</a>.</small></p>
</article>`;
}

export function confirmSignInPage(p: { csrf: string; email: string; action: string }): string {
  return `<article class="auth-card" aria-labelledby="confirm-title">
<hgroup><h1 id="confirm-title">Sign in to Signet</h1><p>One more click, so that a link opened by a mail scanner signs no one in.</p></hgroup>
<form method="post" action="${escapeHtml(p.action)}">
${csrfField(p.csrf)}
<button type="submit" class="wide" data-testid="confirm-sign-in">Sign in as ${escapeHtml(p.email)}</button>
</form>
<p><small>Not you, or did not ask for this? Close this page: nothing happens without the click.</small></p>
</article>`;
}

export function signInErrorPage(p: { title: string; message: string; code: string; requestId: string }): string {
  return `<article class="auth-card" aria-labelledby="error-title">
<hgroup><h1 id="error-title">${escapeHtml(p.title)}</h1><p>${escapeHtml(p.message)}</p></hgroup>
<p><a href="${SIGN_IN}" role="button" class="wide">Back to sign in</a></p>
<p><small>Code <code>${escapeHtml(p.code)}</code> · request <code>${escapeHtml(p.requestId)}</code></small></p>
</article>`;
}
