import { createCipheriv, createDecipheriv, createHmac, randomBytes, randomInt, timingSafeEqual } from 'node:crypto';
import { DEFAULT_LOCALE, type Locale } from '../../i18n/locales.js';
import { sha256Hex } from '../../lib/crypto.js';
import { createLinkTokens } from '../../lib/link-tokens.js';
import type { EmailMessage } from '../email/index.js';
import { verificationCodeEmail } from '../email/templates/index.js';
import type { IdentityProvider } from './identity-provider.js';

/** A verification page link stays open 24 hours; each emailed code lives 10 minutes. */
export const EMAIL_VERIFICATION_LIFETIME_MS = 24 * 3_600_000;
export const CODE_TTL_MS = 10 * 60_000;

export const CODE_PATTERN = /^\d{6}$/;
export { LINK_TOKEN_PATTERN as TOKEN_PATTERN } from '../../lib/link-tokens.js';

/** m***@example.com: enough for the person to recognise their address, not enough to harvest it. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  if (at < 1) return '***';
  return `${email[0]}***${email.slice(at)}`;
}

/**
 * The built-in identity provider: "this person controls this email address", proven with a 6-digit
 * code we email. Its state lives in our verification row, so it has nothing to retrieve or cancel.
 *
 * The page link is `${publicUrl}/verify/<token>`, a link token (lib/link-tokens.ts) for the purpose
 * `verify-link`, as signing links are: the row keeps the salt and the token's SHA-256. A code is stored only as SHA-256(verification id, code); between
 * the request that makes it and the job that mails it, it travels sealed (AES-256-GCM under a key
 * derived from the same secret), so the jobs table never holds a live code in the clear.
 */
export function createEmailCodeIdentity(opts: { secret: string; publicUrl: string }) {
  const links = createLinkTokens(opts.secret, 'verify-link');
  const sealKey = createHmac('sha256', opts.secret).update('verify-code-seal').digest();
  const codeHash = (verificationId: string, code: string) => sha256Hex(`${verificationId}:${code}`);

  const provider: IdentityProvider = {
    name: 'email',
    lifetimeMs: EMAIL_VERIFICATION_LIFETIME_MS,
    async open() {
      const salt = links.newSalt();
      return { providerRef: null, providerUrl: null, linkSalt: salt, tokenHash: links.hash(links.token(salt)) };
    },
    async retrieve() {
      return undefined;
    },
    async cancel() {
      return undefined;
    },
  };

  return {
    provider,
    urlOf: (salt: string) => `${opts.publicUrl}/verify/${links.token(salt)}`,
    tokenHash: links.hash,
    /** Six digits, uniformly drawn (crypto.randomInt), leading zeros kept. */
    newCode: () => String(randomInt(0, 1_000_000)).padStart(6, '0'),
    codeHash,
    /** Constant time: both sides are SHA-256 digests of equal length. */
    codeMatches(storedHash: string, verificationId: string, code: string): boolean {
      const given = Buffer.from(codeHash(verificationId, code), 'hex');
      const stored = Buffer.from(storedHash, 'hex');
      return stored.length === given.length && timingSafeEqual(stored, given);
    },
    seal(code: string, verificationId: string): string {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', sealKey, iv).setAAD(Buffer.from(verificationId));
      const body = Buffer.concat([cipher.update(code, 'utf8'), cipher.final()]);
      return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url');
    },
    unseal(sealed: string, verificationId: string): string {
      const raw = Buffer.from(sealed, 'base64url');
      const decipher = createDecipheriv('aes-256-gcm', sealKey, raw.subarray(0, 12)).setAAD(Buffer.from(verificationId));
      decipher.setAuthTag(raw.subarray(12, 28));
      return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8');
    },
    /** The message that carries a code, in the layout of every Signet email; `test` marks a test send as such. */
    codeEmail(to: { email: string; name: string | null }, code: string, forSigning: boolean, test = false, locale: Locale = DEFAULT_LOCALE): EmailMessage {
      return { to: to.email, ...verificationCodeEmail({ name: to.name, code, forSigning, minutes: CODE_TTL_MS / 60_000, test, locale }) };
    },
  };
}

export type EmailCodeIdentity = ReturnType<typeof createEmailCodeIdentity>;
