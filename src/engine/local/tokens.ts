import { createHmac, hkdfSync } from 'node:crypto';
import { sha256Hex } from '../../lib/crypto.js';

/**
 * Signing tokens are derived, not stored: HMAC-SHA256 of the recipient's id under a key derived from
 * the server secret (256 bits, base64url). The database keeps only the token's SHA-256 for lookup,
 * so neither a database copy alone nor the stored envelope reveals a working link.
 */
export function createTokenDeriver(secret: string) {
  const key = Buffer.from(hkdfSync('sha256', secret, 'signet', 'signing-links v1', 32));
  const token = (engineRecipientId: string | number) => createHmac('sha256', key).update(`recipient:${engineRecipientId}`).digest('base64url');
  return { token, hash: (t: string) => sha256Hex(t) };
}

export type TokenDeriver = ReturnType<typeof createTokenDeriver>;

export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
