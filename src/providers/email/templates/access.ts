import { renderEmail, type RenderedEmail } from './layout.js';

/** The emailed verification code: the code large, how long it lives, and never to share it. */
export function verificationCodeEmail(input: { name: string | null; code: string; forSigning: boolean; minutes: number; test: boolean }): RenderedEmail {
  const where = input.forSigning ? 'on the signing page that asked for it' : 'on the verification page';
  return renderEmail({
    subject: 'Your verification code',
    preview: `Enter it ${where} within ${input.minutes} minutes. Never share it with anyone.`,
    eyebrow: 'Email verification',
    heading: 'Your verification code',
    greeting: input.name ? `Hello ${input.name},` : 'Hello,',
    paragraphs: [],
    code: { label: 'Your verification code is', value: input.code },
    notes: [
      `Enter it ${where} within ${input.minutes} minutes. A newer code replaces this one.`,
      'If you did not ask for a code, ignore this email: nothing happens without it. Never share it with anyone.',
    ],
    footer: [`Sent by Signet because ${input.forSigning ? 'a signing page' : 'a verification page'} asked to confirm this email address.`],
    test: input.test,
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
