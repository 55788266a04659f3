import { z } from 'zod';

export const ZChallengeQuery = z.object({
  wallet: z.string().optional().describe('The wallet address: 0x and 40 hex digits (EIP-55 checksum checked when mixed case)'),
});

export const ZChallenge = z
  .object({
    nonce: z.string().describe('Single-use, valid 10 minutes; send it back to POST /v1/auth/verify'),
    message: z.string().describe('The EIP-4361 (Sign-In with Ethereum) message to sign with personal_sign (EIP-191), bound to this server\'s host'),
    expiresAt: z.iso.datetime(),
  })
  .meta({ id: 'AuthChallenge' });
export type TChallenge = z.infer<typeof ZChallenge>;

/** Every field optional here: an absent one is MISSING_FIELDS (SPEC), not VALIDATION_ERROR. */
export const ZVerifyBody = z
  .object({
    walletAddress: z.string().optional().describe('The address the challenge was issued to'),
    nonce: z.string().optional().describe('The nonce from GET /v1/auth/challenge'),
    signature: z.string().optional().describe('0x-hex personal_sign signature of the challenge message (65 bytes, or 64 compact)'),
  })
  .meta({ id: 'AuthVerifyRequest' });
export type TVerifyBody = { walletAddress: string; nonce: string; signature: string };

export const ZWalletSession = z
  .object({
    token: z.string().describe('Wallet JWT (HS256): send as Authorization: Bearer <token>'),
    walletAddress: z.string().describe('The wallet, lower case'),
    expiresIn: z.number().int().describe('Seconds the token is valid: 3600'),
    expiresAt: z.iso.datetime(),
  })
  .meta({ id: 'WalletSession' });
export type TWalletSession = z.infer<typeof ZWalletSession>;
