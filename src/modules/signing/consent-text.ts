import { t } from '../../i18n/catalogue.js';
import { DEFAULT_LOCALE, resolveLocale, type Locale } from '../../i18n/locales.js';

/**
 * What a recipient agrees to before their first action, unless the account set its own text
 * (`customers.consent_text`). Modelled on what the US ESIGN Act (15 U.S.C. 7001(c)) asks a consumer be
 * told before records are given electronically, and on eIDAS art. 25(1) (an electronic signature is not
 * refused legal effect for being electronic): that electronic records and signatures bind as paper
 * does, how to get a paper copy, how to withdraw consent and what withdrawing costs, and the hardware
 * and software needed to open and keep the records. Plain text: paragraphs are separated by a blank line,
 * so every page and PDF that shows it can lay it out without parsing markup.
 * The paragraphs are catalogue messages (signing-consent.defaultConsent1…5), so the text exists in every locale.
 */
export function defaultConsentText(locale: Locale): string {
  return [1, 2, 3, 4, 5].map((n) => t(locale, `signing-consent.defaultConsent${n}`)).join('\n\n');
}

/** The built-in text in English: what a document records at create (each recipient is shown it in their language). */
export const DEFAULT_CONSENT_TEXT = defaultConsentText(DEFAULT_LOCALE);

/**
 * What `recipientLocale` (else the page's `pageLocale`) is shown and agrees to: the account's own text as
 * written, or the built-in one in their language (catalogue signing-consent, all eight languages).
 */
export function consentTextFor(recorded: string | undefined, recipientLocale: string | null | undefined, pageLocale: string | null | undefined): string {
  if (recorded !== undefined && recorded !== DEFAULT_CONSENT_TEXT) return recorded;
  return defaultConsentText(resolveLocale(recipientLocale, pageLocale));
}
