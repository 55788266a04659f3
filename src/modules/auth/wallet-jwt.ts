import { SignJWT, jwtVerify } from 'jose';
import { AppError } from '../../errors.js';
import { parseWalletAddress } from './wallet-address.js';

export const WALLET_JWT_TTL_SECONDS = 3600;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export type WalletClaims = { walletAddress: string; customerId: string };

/**
 * The stateless wallet JWT: HS256 under JWT_SECRET, sub = the lower-case wallet, customerId, iat, exp,
 * iss = aud = PUBLIC_URL. Verification pins the algorithm (so `alg: none` or another algorithm is
 * refused before any key is used), the issuer and the audience, and reads time from the injected clock.
 */
export function createWalletTokens(deps: { secret: string; publicUrl: string; now: () => Date }) {
  const key = new TextEncoder().encode(deps.secret);
  const invalid = () => new AppError('TOKEN_INVALID', 'The wallet token is invalid or expired; sign in again');
  return {
    async issue(claims: WalletClaims): Promise<{ token: string; expiresAt: Date }> {
      const iat = Math.floor(deps.now().getTime() / 1000);
      const exp = iat + WALLET_JWT_TTL_SECONDS;
      const token = await new SignJWT({ customerId: claims.customerId })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(claims.walletAddress)
        .setIssuedAt(iat)
        .setExpirationTime(exp)
        .setIssuer(deps.publicUrl)
        .setAudience(deps.publicUrl)
        .sign(key);
      return { token, expiresAt: new Date(exp * 1000) };
    },

    /** Throws TOKEN_INVALID for anything but a token we issued that has not expired. */
    async verify(token: string): Promise<WalletClaims> {
      let payload;
      try {
        ({ payload } = await jwtVerify(token, key, {
          algorithms: ['HS256'],
          issuer: deps.publicUrl,
          audience: deps.publicUrl,
          requiredClaims: ['sub', 'iat', 'exp'],
          currentDate: deps.now(),
        }));
      } catch {
        throw invalid();
      }
      const walletAddress = await parseWalletAddress(payload.sub);
      const customerId = payload.customerId;
      if (walletAddress === undefined || walletAddress !== payload.sub || typeof customerId !== 'string' || !UUID.test(customerId)) throw invalid();
      return { walletAddress, customerId };
    },
  };
}

export type WalletTokens = ReturnType<typeof createWalletTokens>;
