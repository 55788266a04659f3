import { LINK_TOKEN_PATTERN, createLinkTokens } from '../../lib/link-tokens.js';

/** A recipient's signing token: a link token (lib/link-tokens.ts) for the purpose `signing-link`. */
export const createTokenDeriver = (secret: string) => createLinkTokens(secret, 'signing-link');

export type TokenDeriver = ReturnType<typeof createTokenDeriver>;

export const TOKEN_PATTERN = LINK_TOKEN_PATTERN;
