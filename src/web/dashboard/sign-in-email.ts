import type { EmailMessage } from '../../providers/email/index.js';
import { escapeHtml } from './layout.js';

/** The sign-in link email: plain and short, readable as text, with a simple HTML twin (no images, no tracking). */
export function signInEmail(to: string, link: string, minutes: number): EmailMessage {
  const text = [
    'Hello,',
    '',
    'Here is your link to sign in to the Signet dashboard:',
    '',
    link,
    '',
    `It works once and expires in ${minutes} minutes. If this is your first sign-in, it also creates your account.`,
    '',
    'If you did not ask to sign in, ignore this email: nothing happens without the link.',
    '',
    '— Signet',
  ].join('\n');
  const href = escapeHtml(link);
  const html = `<!doctype html><html lang="en"><body style="font-family: system-ui, sans-serif; line-height: 1.5; color: #1f2937; max-width: 32rem; margin: 0 auto; padding: 1rem;">
<p>Hello,</p>
<p>Here is your link to sign in to the Signet dashboard:</p>
<p><a href="${href}" style="display: inline-block; padding: 0.6rem 1.2rem; background: #0172ad; color: #ffffff; border-radius: 0.25rem; text-decoration: none;">Sign in to Signet</a></p>
<p style="font-size: 0.9em; color: #4b5563;">Or paste this address into your browser:<br><span style="word-break: break-all;">${href}</span></p>
<p>It works once and expires in ${minutes} minutes. If this is your first sign-in, it also creates your account.</p>
<p style="font-size: 0.9em; color: #4b5563;">If you did not ask to sign in, ignore this email: nothing happens without the link.</p>
<p>— Signet</p>
</body></html>`;
  return { to, subject: 'Your Signet sign-in link', text, html };
}
