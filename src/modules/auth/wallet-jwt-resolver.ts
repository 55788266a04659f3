import type { ActorResolver } from '../../http/auth.js';
import type { WalletTokens } from './wallet-jwt.js';

/** Three base64url segments: the shape of a JWS compact serialization (an API key never has dots). */
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/**
 * `Bearer <JWT>` from POST /v1/auth/verify → the wallet's customer, live mode. Stateless: the signature
 * and claims are the whole check, no query (a token outlives nothing on the server but its exp).
 */
export function walletJwtResolver(deps: { tokens: Pick<WalletTokens, 'verify'> }): ActorResolver {
  return async (_request, bearer) => {
    if (bearer === undefined || !JWT_SHAPE.test(bearer)) return undefined;
    const { walletAddress, customerId } = await deps.tokens.verify(bearer);
    return { customerId, mode: 'live', via: 'wallet_jwt', keyId: null, walletAddress };
  };
}
