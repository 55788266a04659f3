import type { EmailMessage } from '../../providers/email/index.js';
import { signInLinkEmail } from '../../providers/email/templates/index.js';

/** The sign-in link email, in the layout of every Signet email (text and HTML, no images, no tracking). */
export function signInEmail(to: string, link: string, minutes: number): EmailMessage {
  return { to, ...signInLinkEmail({ link, minutes }) };
}
