import { randomBytes } from 'node:crypto';
import type { Db, DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { sha256Hex } from '../../lib/crypto.js';
import type { AccountService } from '../account/account.service.js';
import type { AuditService } from '../audit/audit.service.js';
import type { AuthRepo } from './auth.repo.js';
import type { TChallenge, TVerifyBody, TWalletSession } from './auth.schemas.js';
import { checksummed, parseWalletAddress } from './wallet-address.js';
import { WALLET_JWT_TTL_SECONDS, type WalletTokens } from './wallet-jwt.js';

export const NONCE_TTL_MS = 10 * 60_000;
/** Expired nonces stay an hour so a late verify hears CHALLENGE_EXPIRED rather than INVALID_NONCE. */
const NONCE_RETENTION_MS = 3_600_000;
const STATEMENT = 'Sign in to Signet with this wallet.';
/** SIWE requires a chain id; nothing is read from any chain (no RPC), so it names Ethereum mainnet. */
const CHAIN_ID = 1;

type Deps = {
  db: Db;
  repo: AuthRepo;
  accounts: Pick<AccountService, 'ensureWalletCustomer'>;
  audit: Pick<AuditService, 'customer'>;
  tokens: Pick<WalletTokens, 'issue'>;
  /** PUBLIC_URL: its host is the SIWE domain, the URL itself the SIWE uri. */
  publicUrl: string;
  sandboxLimit: number;
  now: () => Date;
};

/**
 * Wallet sign-in (EIP-4361). The server writes the message and keeps only what rebuilds it (the
 * wallet, the nonce's hash, issuedAt and expirationTime), so verify checks the signature over the
 * exact text it issued: a message for another domain, or with other fields, cannot verify. No RPC is
 * used, so only EOA signatures verify; smart-contract wallets (EIP-1271) are refused with their own code.
 */
export function createAuthService(deps: Deps) {
  const url = new URL(deps.publicUrl);
  // viem loads with the first sign-in, not with the server (wallet-address.ts).
  const messageOf = async (walletAddress: string, nonce: string, issuedAt: Date, expirationTime: Date) =>
    (await import('viem/siwe')).createSiweMessage({
      domain: url.host,
      uri: deps.publicUrl,
      address: await checksummed(walletAddress),
      statement: STATEMENT,
      version: '1',
      chainId: CHAIN_ID,
      nonce,
      issuedAt,
      expirationTime,
    });

  return {
    async challenge(wallet: unknown): Promise<TChallenge> {
      const walletAddress = await parseWalletAddress(wallet);
      if (!walletAddress) throw new AppError('INVALID_WALLET_ADDRESS', 'wallet must be 0x followed by 40 hex digits (a mixed-case address must carry a valid EIP-55 checksum)');
      // 128 random bits, hex: SIWE nonces must be alphanumeric and at least 8 characters.
      const nonce = randomBytes(16).toString('hex');
      // Whole milliseconds survive the round trip through timestamptz, so verify rebuilds the same text.
      const issuedAt = new Date(deps.now().getTime());
      const expiresAt = new Date(issuedAt.getTime() + NONCE_TTL_MS);
      await deps.repo.insertNonce(deps.db, { nonceHash: sha256Hex(nonce), walletAddress, createdAt: issuedAt, expiresAt });
      return { nonce, message: await messageOf(walletAddress, nonce, issuedAt, expiresAt), expiresAt: expiresAt.toISOString() };
    },

    /**
     * Checks the signature before spending the nonce, so a wrong signature (which anyone who saw the
     * nonce could send) does not burn a wallet's sign-in; then spends it with one conditional UPDATE in
     * the transaction that creates or finds the customer: one nonce, one token, whatever the concurrency.
     */
    async verify(body: Partial<TVerifyBody> | null | undefined, request: { requestId: string; ip: string }): Promise<TWalletSession> {
      const { walletAddress: rawWallet, nonce, signature } = body ?? {};
      if (!rawWallet || !nonce || !signature) throw new AppError('MISSING_FIELDS', 'walletAddress, nonce and signature are required');
      const walletAddress = await parseWalletAddress(rawWallet);
      if (!walletAddress) throw new AppError('INVALID_WALLET_ADDRESS', 'walletAddress must be 0x followed by 40 hex digits');
      const nonceHash = sha256Hex(nonce);
      const row = await deps.repo.findNonce(deps.db, nonceHash);
      // A nonce issued to another wallet is, for this one, a nonce that does not exist.
      if (!row || row.walletAddress !== walletAddress) throw new AppError('INVALID_NONCE', 'The nonce is unknown; request a new challenge');
      const now = deps.now();
      if (row.usedAt) throw new AppError('NONCE_ALREADY_USED', 'The nonce was already used; request a new challenge');
      if (row.expiresAt <= now) throw new AppError('CHALLENGE_EXPIRED', 'The challenge expired; request a new one');
      await checkSignature(await messageOf(walletAddress, nonce, row.createdAt, row.expiresAt), walletAddress, signature);

      return deps.db.transaction(async (tx: Tx) => {
        if (!(await deps.repo.consumeNonce(tx, { nonceHash, walletAddress, now }))) {
          // Lost the race to a concurrent verify (or expired in the meantime).
          const after = await deps.repo.findNonce(tx, nonceHash);
          if (after && !after.usedAt) throw new AppError('CHALLENGE_EXPIRED', 'The challenge expired; request a new one');
          throw new AppError('NONCE_ALREADY_USED', 'The nonce was already used; request a new challenge');
        }
        const { customer, created } = await deps.accounts.ensureWalletCustomer(tx, { walletAddress, sandboxLimit: deps.sandboxLimit });
        await deps.audit.customer(tx, {
          actor: { customerId: customer.id, mode: 'live', via: 'wallet_jwt', keyId: null, walletAddress },
          ...request,
          testModeHeader: false,
        }, { action: created ? 'wallet.sign_up' : 'wallet.sign_in', resourceType: 'customer', resourceId: customer.id });
        const { token, expiresAt } = await deps.tokens.issue({ walletAddress, customerId: customer.id });
        return { token, walletAddress, expiresIn: WALLET_JWT_TTL_SECONDS, expiresAt: expiresAt.toISOString() };
      });
    },

    async purgeExpiredNonces(tx: DbOrTx): Promise<number> {
      return deps.repo.purgeExpired(tx, new Date(deps.now().getTime() - NONCE_RETENTION_MS));
    },
  };
}

/** personal_sign (EIP-191) over the message by the wallet's key. */
async function checkSignature(message: string, walletAddress: string, signature: string): Promise<void> {
  const refused = () => new AppError('INVALID_SIGNATURE', 'The signature does not recover the wallet address over the challenge message');
  const { isHex, size, verifyMessage } = await import('viem');
  if (!isHex(signature, { strict: true })) throw refused();
  // 65 bytes (r, s, v) or 64 (EIP-2098 compact) is an EOA's; anything else is a contract wallet's
  // (EIP-1271, or ERC-6492 wrapped), which only the wallet's contract can check, through an RPC.
  const bytes = size(signature);
  if (bytes !== 65 && bytes !== 64) {
    throw new AppError('CONTRACT_WALLET_UNSUPPORTED', 'Only externally owned accounts can sign in: smart-contract wallet signatures (EIP-1271) need an RPC, which this server does not use');
  }
  let ok = false;
  try {
    ok = await verifyMessage({ address: await checksummed(walletAddress), message, signature });
  } catch {
    ok = false;
  }
  if (!ok) throw refused();
}

export type AuthService = ReturnType<typeof createAuthService>;
