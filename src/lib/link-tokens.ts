import { createHmac, randomBytes } from 'node:crypto';
import { sha256Hex } from './crypto.js';

/**
 * A link token is HMAC-SHA256(SIGNING_LINK_SECRET, `<purpose>:<salt>`), base64url, over a random
 * 128-bit salt (DESIGN §4.6). It is derived on demand and never stored: the database keeps the salt and
 * the token's SHA-256 for lookup, so the secret alone forges nothing (no salt) and a database copy alone
 * opens nothing (no secret). A new salt revokes one link. `purpose` keeps one kind of link from ever
 * being another (a signing link is not a verification link).
 */
export function createLinkTokens(secret: string, purpose: string) {
  const token = (salt: string) => createHmac('sha256', secret).update(`${purpose}:${salt}`).digest('base64url');
  return {
    token,
    hash: (t: string) => sha256Hex(t),
    newSalt: () => randomBytes(16).toString('hex'),
  };
}

/** What a link token looks like (43 base64url characters: 32 bytes); anything else names nothing. */
export const LINK_TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
