import { createHmac, randomBytes } from 'node:crypto';
import { sha256Hex } from '../../lib/crypto.js';

/**
 * A recipient's signing token is HMAC-SHA256(SIGNING_LINK_SECRET, the recipient's random 128-bit
 * salt), base64url (DESIGN §4.6). It is derived on demand and never stored: the database keeps the
 * salt and the token's SHA-256 for lookup, so the secret alone forges nothing (no salt) and a database
 * copy alone opens nothing (no secret). A new salt revokes one recipient's link.
 */
export function createTokenDeriver(secret: string) {
  const token = (salt: string) => createHmac('sha256', secret).update(`signing-link:${salt}`).digest('base64url');
  return {
    token,
    hash: (t: string) => sha256Hex(t),
    newSalt: () => randomBytes(16).toString('hex'),
  };
}

export type TokenDeriver = ReturnType<typeof createTokenDeriver>;

export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
