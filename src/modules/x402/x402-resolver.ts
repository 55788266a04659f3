import type { PaymentPayload } from '@x402/core/types';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Hex } from 'viem';
import type { Actor } from '../../context.js';
import type { X402Config } from '../../config.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { testModeRequested, type PaymentResolver } from '../../http/auth.js';
import type { PaymentGate } from '../../http/idempotency.js';
import { routeConfigOf } from '../../http/route-config.js';
import type { BillableOperation } from '../../lib/prices.js';
import type { AccountService } from '../account/account.service.js';
import type { AuditService } from '../audit/audit.service.js';
import { fastifyAdapter, paymentHeaderOf } from './fastify-adapter.js';
import type { X402Service } from './x402.service.js';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What a call of this route is charged as when its body decides (a draft is not charged): an x402
     * caller pays that operation's price, X402_MIN_PRICE for undefined, and gets its 402 offer once the
     * body is read. Without it, the route's `price` (or X402_MIN_PRICE) is what every call costs.
     */
    x402Price?: (request: FastifyRequest) => BillableOperation | undefined;
  }
  interface FastifyRequest {
    /** An x402 payment, its signature checked (the payer is who signed it), not yet verified nor bound to a price. */
    x402Payer?: { payload: PaymentPayload; payer: string };
  }
}

type Deps = {
  db: Db;
  /** undefined: x402 is off (X402_* unset). */
  x402: { service: X402Service; config: X402Config } | undefined;
  accounts: Pick<AccountService, 'ensureWalletCustomer'>;
  audit: Pick<AuditService, 'customer'>;
  publicUrl: string;
  sandboxLimit: number;
};

/**
 * SPEC.md's mode X: a payment header is the credential, on the mutating customer routes (one call, one
 * payment). Resolved last in the chain: a bearer credential wins. With no credential at all on such a
 * route, the answer is the 402 that tells an x402 client what to pay. A payment is only read here (its
 * signature must recover its payer); the gate verifies it once the call's price is known, before any work.
 */
export function x402Resolver(deps: Deps): PaymentResolver {
  return async (request, bearer) => {
    if (bearer !== undefined) return undefined;
    const header = paymentHeaderOf(request);
    const x402 = deps.x402;
    const config = request.routeOptions.config;
    if (header === undefined) {
      // A free test send needs an account (a test key): no payment is offered for one.
      if (!x402 || !payable(request) || testModeRequested(request)) return undefined;
      // Priced by the body or by the handler: the 402, and its price, wait for the body.
      if (config.x402Price || config.pricedBy === 'handler') return 'deferred';
      throw await x402.service.paymentRequired(resourceOf(request, x402.service, deps.publicUrl));
    }
    if (!payable(request)) throw new AppError('X402_NOT_APPLICABLE', 'x402 pays for mutating calls only; read routes and /v1/account/* take an API key or a wallet JWT');
    if (!x402) throw new AppError('X402_NOT_CONFIGURED', 'This server does not accept x402 payments; authenticate with Authorization: Bearer <API key or wallet JWT>');
    // SPEC.md makes a test send free, which a payment cannot be: refused before anything is paid.
    if (testModeRequested(request)) throw new AppError('X402_NOT_APPLICABLE', 'X-Service-Test-Mode asks for a free test send, which needs an account (a test API key); x402 pays live calls only: drop the header to pay');

    // @x402/core (and, below, @x402/evm and viem) load with the first payment, not with the server:
    // with x402 off they never do (docs/operating.md: Memory).
    const { decodePaymentSignatureHeader } = await import('@x402/core/http');
    let payload: PaymentPayload;
    try {
      payload = decodePaymentSignatureHeader(header);
    } catch {
      throw new AppError('PAYMENT_INVALID', 'The payment header is not a base64 x402 PaymentPayload', { reason: 'invalid_payload' });
    }
    request.x402Payer = { payload, payer: await claimedPayer(payload, x402.config) };
    return 'deferred';
  };
}

/** One call as its payer sees it: what it is (its price; undefined: X402_MIN_PRICE) and how it is described. */
export type PricedCall = { operation: BillableOperation | undefined; description: string };

/** What a REST call costs an x402 caller: its route's price, or what its body makes it. */
function pricedCallOf(request: FastifyRequest): PricedCall {
  const config = request.routeOptions.config;
  return { operation: config.x402Price ? config.x402Price(request) : config.price, description: `${request.method} ${request.routeOptions.url}` };
}

/** What one call of this route costs an x402 caller, and where to pay it. */
function resourceOf(request: FastifyRequest, service: X402Service, publicUrl: string, call: PricedCall = pricedCallOf(request)) {
  return {
    priceMicros: service.priceOf(call.operation),
    url: `${publicUrl}${request.url.split('?')[0]}`,
    description: call.description,
    adapter: fastifyAdapter(request, publicUrl),
  };
}

/**
 * The request's payment for this call: verified by the facilitator first (a worthless one is refused
 * here, having cost one facilitator call), then its payer's customer made if it is new, with its
 * sign-up audit row. Answers the actor and the gate the commit settles.
 */
async function admit(deps: Deps & { x402: NonNullable<Deps['x402']> }, request: FastifyRequest, call: PricedCall): Promise<{ actor: Actor; gate: PaymentGate }> {
  const { payload, payer } = request.x402Payer!;
  const { service } = deps.x402;
  const resource = resourceOf(request, service, deps.publicUrl, call);
  const requirements = await service.verify({ ...resource, payload });
  // Its own short transaction, like the idempotency reservation that needs the customer id next.
  const customerId = await deps.db.transaction(async (tx) => {
    const { customer, created } = await deps.accounts.ensureWalletCustomer(tx, { walletAddress: payer, sandboxLimit: deps.sandboxLimit });
    if (created) {
      const actor: Actor = { customerId: customer.id, mode: 'live', via: 'x402', keyId: null, walletAddress: payer };
      await deps.audit.customer(tx, { actor, requestId: request.id, ip: request.ip, testModeHeader: false }, { action: 'x402.sign_up', resourceType: 'customer', resourceId: customer.id });
    }
    return customer.id;
  });
  const { paid, gate } = service.paymentFor({ ...resource, payload, requirements, customerId, payer, requestId: request.id });
  return { actor: { customerId, mode: 'live', via: 'x402', keyId: null, walletAddress: payer, payment: paid }, gate };
}

/**
 * x402 on REST routes, once the body is read and before the Idempotency-Key is reserved (so the key is
 * the payer's): a payment is verified and bound to its call (`request.actor`, `request.payment`); a
 * route priced by its body answers its 402 here. POST /mcp (`pricedBy: 'handler'`) does this itself.
 */
export function registerX402Gate(app: FastifyInstance, deps: Deps): void {
  const x402 = deps.x402;
  if (!x402) return;
  app.addHook('preHandler', async (request) => {
    const config = routeConfigOf(request);
    if (request.actor || config.pricedBy === 'handler' || config.auth !== 'customer') return;
    if (request.x402Payer) {
      const { actor, gate } = await admit({ ...deps, x402 }, request, pricedCallOf(request));
      request.actor = actor;
      request.payment = gate;
    } else if (config.x402Price && payable(request)) {
      throw await x402.service.paymentRequired(resourceOf(request, x402.service, deps.publicUrl));
    }
  });
}

/**
 * x402 for a route priced by its handler (`pricedBy: 'handler'`; POST /mcp, whose price is the tool's):
 * the handler, once it has read the body, asks for the payment or has the request's one verified for
 * that price, with the same terms (requirements, verify, settle) as a route priced in its config.
 */
export function x402CallPricing(deps: Deps) {
  const x402 = deps.x402;
  return {
    enabled: x402 !== undefined,
    /** The 402 PAYMENT_REQUIRED (with PAYMENT-REQUIRED) for this call; undefined when x402 is off, or for a test send. */
    async required(request: FastifyRequest, call: PricedCall): Promise<AppError | undefined> {
      if (!x402 || testModeRequested(request)) return undefined;
      return x402.service.paymentRequired(resourceOf(request, x402.service, deps.publicUrl, call));
    },
    /** The request carries a payment (not yet verified). */
    paying: (request: FastifyRequest): boolean => request.x402Payer !== undefined,
    /** The request's payment, verified for this call: the actor it pays as and the gate the commit settles. */
    async bind(request: FastifyRequest, call: PricedCall): Promise<{ actor: Actor; gate: PaymentGate }> {
      if (!x402 || !request.x402Payer) throw new Error('x402: bind without a payment');
      return admit({ ...deps, x402 }, request, call);
    },
  };
}

export type X402CallPricing = ReturnType<typeof x402CallPricing>;

/**
 * A wallet-JWT caller whose balance does not cover a payable call may pay that one call on-chain: its
 * 402 INSUFFICIENT_BALANCE carries the PAYMENT-REQUIRED header an x402 client would get.
 */
export async function withPaymentOffer(err: AppError, request: FastifyRequest, x402: { service: X402Service } | undefined, publicUrl: string): Promise<AppError> {
  if (err.code !== 'INSUFFICIENT_BALANCE' || request.actor?.via !== 'wallet_jwt' || !x402 || !payable(request)) return err;
  try {
    const offer = await x402.service.paymentRequired(resourceOf(request, x402.service, publicUrl));
    return new AppError(err.code, err.message, err.extras, { ...err.headers, ...offer.headers });
  } catch {
    // No offer (the facilitator is down): the refusal as it was.
    return err;
  }
}

/** Mutating customer routes, except the account area (SPEC.md: X402_NOT_APPLICABLE there). */
function payable(request: FastifyRequest): boolean {
  return request.routeOptions.config.auth === 'customer' && MUTATING.has(request.method) && !(request.routeOptions.url ?? '').startsWith('/v1/account');
}

/**
 * The `from` of the EIP-3009 authorization (lower case), once its signature recovers it (no RPC: the token's EIP-712
 * domain is configured). A forged claim is refused here, before it can create a customer for a wallet
 * it does not hold; the facilitator checks everything again.
 */
export async function claimedPayer(payload: PaymentPayload, config: X402Config): Promise<string> {
  const inner = payload.payload as { signature?: unknown; authorization?: Record<string, unknown> } | undefined;
  const auth = inner?.authorization;
  const from = auth?.from;
  if (typeof from !== 'string' || !/^0x[0-9a-fA-F]{40}$/.test(from) || typeof inner?.signature !== 'string') {
    throw new AppError('PAYMENT_INVALID', 'The payment is not an EIP-3009 authorization (exact scheme on EVM)', { reason: 'invalid_payload' });
  }
  // Signed for another token or chain, the authorization cannot recover its payer against ours: that is
  // a payment in the wrong terms, not a forged one (SPEC.md keeps INVALID_SIGNATURE for the latter).
  const accepted = payload.accepted as Partial<PaymentPayload['accepted']> | undefined;
  const terms = { network: config.network, asset: config.asset };
  if (accepted?.network !== config.network) throw new AppError('PAYMENT_INVALID', `The payment is for network ${String(accepted?.network)}; this server takes ${config.network}`, { reason: 'network_mismatch', ...terms });
  if (typeof accepted.asset !== 'string' || accepted.asset.toLowerCase() !== config.asset.toLowerCase()) {
    throw new AppError('PAYMENT_INVALID', `The payment is in asset ${String(accepted.asset)}; this server takes ${config.asset} on ${config.network}`, { reason: 'asset_mismatch', ...terms });
  }
  const chainId = /^eip155:(\d+)$/.exec(config.network)?.[1];
  const [{ authorizationTypes }, { verifyTypedData }] = await Promise.all([import('@x402/evm'), import('viem')]);
  let valid = false;
  try {
    valid = await verifyTypedData({
      address: from as Hex,
      domain: { name: config.assetName, version: config.assetVersion, chainId: chainId ? Number(chainId) : undefined, verifyingContract: config.asset as Hex },
      types: authorizationTypes,
      primaryType: 'TransferWithAuthorization',
      message: {
        from: from as Hex,
        to: auth!.to as Hex,
        value: BigInt(auth!.value as string),
        validAfter: BigInt(auth!.validAfter as string),
        validBefore: BigInt(auth!.validBefore as string),
        nonce: auth!.nonce as Hex,
      },
      signature: inner.signature as Hex,
    });
  } catch {
    valid = false;
  }
  if (!valid) throw new AppError('INVALID_SIGNATURE', 'The payment authorization was not signed by the address it claims to come from', { reason: 'invalid_exact_evm_signature' });
  return from.toLowerCase();
}
