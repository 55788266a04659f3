import { t } from '../../../i18n/catalogue.js';
import { DEFAULT_LOCALE, type Locale } from '../../../i18n/locales.js';
import { renderEmail, type RenderedEmail } from './layout.js';

/** The emailed verification code: the code large, how long it lives, and never to share it. In the reader's language (English when unset). */
export function verificationCodeEmail(input: { name: string | null; code: string; forSigning: boolean; minutes: number; test: boolean; locale?: Locale }): RenderedEmail {
  const locale = input.locale ?? DEFAULT_LOCALE;
  const where = input.forSigning ? 'signing' : 'page';
  return renderEmail({
    subject: t(locale, 'email.codeSubject'),
    preview: t(locale, 'email.codePreview', { where, minutes: input.minutes }),
    eyebrow: t(locale, 'email.codeEyebrow'),
    heading: t(locale, 'email.codeSubject'),
    greeting: input.name ? t(locale, 'email.greeting', { name: input.name }) : t(locale, 'email.greetingAnonymous'),
    paragraphs: [],
    code: { label: t(locale, 'email.codeLabel'), value: input.code },
    notes: [t(locale, 'email.codeEnter', { where, minutes: input.minutes }), t(locale, 'email.codeIgnore')],
    footer: [t(locale, 'email.codeFooter', { where })],
    test: input.test,
    locale,
  });
}

/** The dashboard's sign-in link: plain and short (the wording predates this layout and is kept). */
export function signInLinkEmail(input: { link: string; minutes: number }): RenderedEmail {
  return renderEmail({
    subject: 'Your Signet sign-in link',
    preview: `It works once and expires in ${input.minutes} minutes.`,
    eyebrow: 'Dashboard sign-in',
    heading: 'Sign in to Signet',
    greeting: 'Hello,',
    paragraphs: ['Here is your link to sign in to the Signet dashboard:'],
    button: { label: 'Sign in to Signet', url: input.link, bareInText: true },
    notes: [
      `It works once and expires in ${input.minutes} minutes. If this is your first sign-in, it also creates your account.`,
      'If you did not ask to sign in, ignore this email: nothing happens without the link.',
    ],
    signoff: '— Signet',
    footer: ['You received this email because a sign-in link to the Signet dashboard was requested for this address.'],
  });
}
