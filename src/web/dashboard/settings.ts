/** GET /dashboard/settings: the name recipients see, where the sender's notices go, and the consent text. */
import { LOCALE_NAMES, LOCALES } from '../../i18n/locales.js';
import { csrfField, escapeHtml } from './layout.js';
import { pageHeader } from './parts.js';

export type SettingsForm = { displayName: string; notificationEmail: string; senderNotifications: boolean; consentText: string; allowedOrigins: string; brandColor: string; defaultLocale: string };

export type SettingsView = {
  csrf: string;
  /** The account's own email: where notices go when no other address is set. */
  email: string;
  form: SettingsForm;
  /** The built-in consent text, shown as the textarea's placeholder. */
  defaultConsentText: string;
  displayNameMax: number;
  consentTextMax: number;
  /** After a refused save: the message per field (displayName, notificationEmail, consentText, form). */
  errors?: Partial<Record<keyof SettingsForm | 'form', string>>;
  /** The current logo (a path of this server) and, after a refused upload, why. */
  logo: { src: string | null; error?: string };
  /** The largest logo accepted, in KB and pixels a side, for the help text. */
  logoMax: { kb: number; side: number };
};

/**
 * The logo's own forms (a file upload cannot share the settings form, whose fields are all sent on
 * every save): the current logo, a file input, and a removal when there is one.
 */
function logoForms(v: SettingsView): string {
  const err = v.logo.error;
  const described = err ? ' aria-invalid="true" aria-describedby="logo-error logo-help"' : ' aria-describedby="logo-help"';
  const current = v.logo.src
    ? `<figure class="logo-current"><img src="${escapeHtml(v.logo.src)}" alt="Your current logo" data-testid="current-logo"><figcaption>Current logo</figcaption></figure>`
    : '<p data-testid="no-logo">No logo yet: the signing page and invitations show your name only.</p>';
  const remove = v.logo.src
    ? `<form method="post" action="/dashboard/settings/logo/remove" class="logo-remove">${csrfField(v.csrf)}<button type="submit" class="secondary">Remove logo</button></form>`
    : '';
  return `<article aria-labelledby="logo-title" class="settings logo">
<header><h2 id="logo-title">Logo</h2></header>
${current}
<form method="post" action="/dashboard/settings/logo" enctype="multipart/form-data" class="logo-upload">
${csrfField(v.csrf)}
<label for="logo-file">${v.logo.src ? 'Replace with' : 'Upload a logo'}
<input type="file" id="logo-file" name="file" accept="image/png,image/jpeg" required${described}>
</label>
${err ? `<small id="logo-error" class="field-error" role="alert">${escapeHtml(err)}</small>` : ''}<small id="logo-help">PNG or JPEG, at most ${v.logoMax.kb} KB and ${v.logoMax.side}×${v.logoMax.side} pixels. Shown at the top of the signing page and in invitation emails, on envelopes created from now on.</small>
<button type="submit">Upload logo</button>
</form>
${remove}
</article>`;
}

/** A field's error, tied to its input by aria-describedby so a screen reader reads it with the field. */
function fieldError(v: SettingsView, field: keyof SettingsForm): { attrs: string; html: string } {
  const message = v.errors?.[field];
  if (!message) return { attrs: '', html: '' };
  return { attrs: ` aria-invalid="true" aria-describedby="${field}-error"`, html: `<small id="${field}-error" class="field-error">${escapeHtml(message)}</small>` };
}

export function settingsPage(v: SettingsView): string {
  const name = fieldError(v, 'displayName');
  const notify = fieldError(v, 'notificationEmail');
  const consent = fieldError(v, 'consentText');
  const origins = fieldError(v, 'allowedOrigins');
  const color = fieldError(v, 'brandColor');
  const locale = fieldError(v, 'defaultLocale');
  const summary = v.errors
    ? `<div class="form-errors" role="alert" tabindex="-1" id="form-errors"><p><strong>Nothing was saved.</strong> ${escapeHtml(v.errors.form ?? 'Correct the fields marked below and save again.')}</p></div>`
    : '';
  return `${pageHeader({ title: 'Settings', lead: 'How your account appears to the people you send documents to, and what you hear back.' })}
${summary}
<form method="post" action="/dashboard/settings" class="settings" novalidate>
${csrfField(v.csrf)}
<article aria-labelledby="sender-title">
<header><h2 id="sender-title">Sender name</h2></header>
<label for="displayName">Your name as recipients will see it
<input type="text" id="displayName" name="displayName" value="${escapeHtml(v.form.displayName)}" maxlength="${v.displayNameMax}" required autocomplete="organization"${name.attrs || ' aria-describedby="displayName-help"'}>
</label>
${name.html}<small id="displayName-help">Invitations read “${escapeHtml(v.form.displayName.trim() || 'Your name')} asks you to sign…”. Use your company's or your own name, up to ${v.displayNameMax} characters.</small>
</article>
<article aria-labelledby="notices-title">
<header><h2 id="notices-title">Notices</h2></header>
<label for="senderNotifications"><input type="checkbox" role="switch" id="senderNotifications" name="senderNotifications" value="on"${v.form.senderNotifications ? ' checked' : ''} aria-describedby="senderNotifications-help"> Email me when an envelope is completed, declined or expires</label>
<small id="senderNotifications-help">A completed envelope's notice carries the sealed PDF. Test envelopes' notices go to the server's outbox only, as their invitations do.</small>
<label for="notificationEmail">Send notices to
<input type="email" id="notificationEmail" name="notificationEmail" value="${escapeHtml(v.form.notificationEmail)}" placeholder="${escapeHtml(v.email)}" maxlength="320" autocomplete="email"${notify.attrs || ' aria-describedby="notificationEmail-help"'}>
</label>
${notify.html}<small id="notificationEmail-help">Leave empty to use your account's address, ${escapeHtml(v.email)}.</small>
</article>
<article aria-labelledby="consent-title">
<header><h2 id="consent-title">Consent to sign electronically</h2></header>
<p>Before their first action, each recipient agrees to use electronic records and signatures. Leave this empty to show the built-in text (shown in grey), written for the US ESIGN Act and the EU's eIDAS regulation.</p>
<label for="consentText">Consent text
<textarea id="consentText" name="consentText" rows="10" maxlength="${v.consentTextMax}" placeholder="${escapeHtml(v.defaultConsentText)}"${consent.attrs || ' aria-describedby="consentText-help"'}>${escapeHtml(v.form.consentText)}</textarea>
</label>
${consent.html}<small id="consentText-help">Plain text, up to ${v.consentTextMax.toLocaleString('en-US')} characters; a blank line starts a new paragraph. It should say that electronic signatures bind as paper ones do, how to get a paper copy, how to withdraw consent, and what is needed to open the documents.</small>
</article>
<article aria-labelledby="language-title">
<header><h2 id="language-title">Recipients' language</h2></header>
<label for="defaultLocale">Language of signing pages and emails
<select id="defaultLocale" name="defaultLocale"${locale.attrs || ' aria-describedby="defaultLocale-help"'}>
<option value=""${v.form.defaultLocale === '' ? ' selected' : ''}>Each recipient's browser language (else English)</option>
${LOCALES.map((l) => `<option value="${l}" lang="${l}"${v.form.defaultLocale === l ? ' selected' : ''}>${escapeHtml(LOCALE_NAMES[l])}</option>`).join('\n')}
</select>
</label>
${locale.html}<small id="defaultLocale-help">For recipients you give no locale of their own (the recipient's or the template slot's locale wins).</small>
</article>
<article aria-labelledby="brand-title">
<header><h2 id="brand-title">Brand</h2></header>
<label for="brandColor">Accent colour
<input type="text" id="brandColor" name="brandColor" value="${escapeHtml(v.form.brandColor)}" placeholder="#1f5fd1" maxlength="7" spellcheck="false" autocomplete="off"${color.attrs || ' aria-describedby="brandColor-help"'}>
</label>
${color.html}<small id="brandColor-help">As #rrggbb, for the signing page's main buttons and the invitation's button. It carries white text, so it must contrast with white by at least 4.5:1 (WCAG AA); leave empty for Signet's blue.</small>
</article>
<article aria-labelledby="embedding-title">
<header><h2 id="embedding-title">Embedded signing</h2></header>
<p>Pages on these origins may show your recipients' embed links inside a frame; every other site is refused. See the embedding guide.</p>
<label for="allowedOrigins">Allowed origins, one per line
<textarea id="allowedOrigins" name="allowedOrigins" rows="4" spellcheck="false" placeholder="https://app.example.com"${origins.attrs || ' aria-describedby="allowedOrigins-help"'}>${escapeHtml(v.form.allowedOrigins)}</textarea>
</label>
${origins.html}<small id="allowedOrigins-help">Up to 10, each https://host[:port] (http only for localhost), no path.</small>
</article>
<button type="submit">Save settings</button>
</form>
${logoForms(v)}`;
}
