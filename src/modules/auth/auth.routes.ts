import type { FastifyInstance } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { INPUT_ERRORS, JSON_BODY_ERRORS, errorResponses } from '../../http/route-docs.js';
import { ZChallenge, ZChallengeQuery, ZVerifyBody, ZWalletSession } from './auth.schemas.js';
import type { AuthService } from './auth.service.js';

const FLOW = `Wallet sign-in: (1) GET /v1/auth/challenge?wallet=<address>; (2) sign \`message\` with personal_sign
(EIP-191); (3) POST /v1/auth/verify with walletAddress, nonce and signature; (4) send the token as
Authorization: Bearer <token>. Nonces are single-use and live 10 minutes. Only EOA wallets can sign in:
smart-contract wallets (EIP-1271) are refused with CONTRACT_WALLET_UNSUPPORTED (no RPC is used).`;

export function authRoutes(deps: { auth: AuthService }) {
  return async function (app: FastifyInstance): Promise<void> {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const tags = ['Wallet sign-in'];

    r.get('/v1/auth/challenge', {
      schema: {
        operationId: 'getAuthChallenge',
        tags,
        summary: 'A Sign-In with Ethereum message and single-use nonce for a wallet',
        description: FLOW,
        querystring: ZChallengeQuery,
        response: { 200: ZChallenge, ...errorResponses(INPUT_ERRORS, ['INVALID_WALLET_ADDRESS', 'RATE_LIMITED', 'INTERNAL_ERROR']) },
      },
      handler: async (request) => deps.auth.challenge(request.query.wallet),
    });

    r.post('/v1/auth/verify', {
      schema: {
        operationId: 'verifyAuthSignature',
        tags,
        summary: 'Exchange a signed challenge for a wallet JWT (valid 3600 seconds)',
        description: FLOW,
        body: ZVerifyBody.nullish(),
        response: {
          200: ZWalletSession,
          ...errorResponses(INPUT_ERRORS, JSON_BODY_ERRORS, [
            'MISSING_FIELDS',
            'INVALID_WALLET_ADDRESS',
            'INVALID_NONCE',
            'CHALLENGE_EXPIRED',
            'NONCE_ALREADY_USED',
            'INVALID_SIGNATURE',
            'CONTRACT_WALLET_UNSUPPORTED',
            'RATE_LIMITED',
            'INTERNAL_ERROR',
          ]),
        },
      },
      handler: async (request) => deps.auth.verify(request.body, { requestId: request.id, ip: request.ip }),
    });
  };
}
