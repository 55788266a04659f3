import { decodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload } from '@x402/core/types';
import { authorizationTypes } from '@x402/evm';
import type { FastifyRequest } from 'fastify';
import { verifyTypedData, type Hex } from 'viem';
import type { Actor, PaidCall } from '../../context.js';
import type { X402Config } from '../../config.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { ActorResolver } from '../../http/auth.js';
import type { PaymentGate } from '../../http/idempotency.js';
import type { BillableOperation } from '../../lib/prices.js';
import type { AccountService } from '../account/account.service.js';
import type { AuditService } from '../audit/audit.service.js';
import { fastifyAdapter, paymentHeaderOf } from './fastify-adapter.js';
import type { X402Service } from './x402.service.js';

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

declare module 'fastify' {
  interface FastifyRequest {
    /** On a route priced by its handler (`pricedBy: 'handler'`): the payment, resolved to its payer, not yet bound to a price. */
    x402Payer?: { payload: PaymentPayload; payer: string; customerId: string };
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
 * route, the answer is the 402 that tells an x402 client what to pay. The payer's first payment creates
 * its customer, the same one a wallet JWT for that address resolves to.
 */
export function x402Resolver(deps: Deps): ActorResolver {
  return async (request, bearer) => {
    if (bearer !== undefined) return undefined;
    const header = paymentHeaderOf(request);
    const x402 = deps.x402;
    const pricedByHandler = request.routeOptions.config.pricedBy === 'handler';
    if (header === undefined) {
      // Priced by its handler: the price, and so the 402, waits for the body.
      if (x402 && payable(request) && !pricedByHandler) throw await x402.service.paymentRequired(resourceOf(request, x402.service, deps.publicUrl));
      return undefined;
    }
    if (!payable(request)) throw new AppError('X402_NOT_APPLICABLE', 'x402 pays for mutating calls only; read routes and /v1/account/* take an API key or a wallet JWT');
    if (!x402) throw new AppError('X402_NOT_CONFIGURED', 'This server does not accept x402 payments; authenticate with Authorization: Bearer <API key or wallet JWT>');

    let payload: PaymentPayload;
    try {
      payload = decodePaymentSignatureHeader(header);
    } catch {
      throw new AppError('PAYMENT_INVALID', 'The payment header is not a base64 x402 PaymentPayload', { reason: 'invalid_payload' });
    }
    const payer = await claimedPayer(payload, x402.config);
    // Its own short transaction, like the idempotency reservation that needs the customer id next.
    const customerId = await deps.db.transaction(async (tx) => {
      const { customer, created } = await deps.accounts.ensureWalletCustomer(tx, { walletAddress: payer, sandboxLimit: deps.sandboxLimit });
      if (created) {
        const actor: Actor = { customerId: customer.id, mode: 'live', via: 'x402', keyId: null, walletAddress: payer };
        await deps.audit.customer(tx, { actor, requestId: request.id, ip: request.ip, testModeHeader: false }, { action: 'x402.sign_up', resourceType: 'customer', resourceId: customer.id });
      }
      return customer.id;
    });
    if (pricedByHandler) {
      // Resolved now, so the rate limit and the idempotency keys are the payer's; x402CallPricing().bind prices it.
      request.x402Payer = { payload, payer, customerId };
      return { customerId, mode: 'live', via: 'x402', keyId: null, walletAddress: payer } satisfies Actor;
    }
    const resource = resourceOf(request, x402.service, deps.publicUrl);
    const { paid, gate } = x402.service.paymentFor({ ...resource, payload, customerId, payer, requestId: request.id });
    request.payment = gate;
    const actor: Actor = { customerId, mode: 'live', via: 'x402', keyId: null, walletAddress: payer, payment: paid };
    return actor;
  };
}

/** One call as its payer sees it: what it is (its price; undefined: X402_MIN_PRICE) and how it is described. */
export type PricedCall = { operation: BillableOperation | undefined; description: string };

/** What one call of this route costs an x402 caller, and where to pay it. */
function resourceOf(request: FastifyRequest, service: X402Service, publicUrl: string, call?: PricedCall) {
  const { operation, description } = call ?? { operation: request.routeOptions.config.price, description: `${request.method} ${request.routeOptions.url}` };
  return {
    priceMicros: service.priceOf(operation),
    url: `${publicUrl}${request.url.split('?')[0]}`,
    description,
    adapter: fastifyAdapter(request, publicUrl),
  };
}

/**
 * x402 for a route priced by its handler (`pricedBy: 'handler'`; POST /mcp, whose price is the tool's):
 * the handler, once it has read the body, asks for the payment or binds the resolved one to the price,
 * with the same terms (requirements, verify, settle) as a route priced in its config.
 */
export function x402CallPricing(deps: { x402: { service: X402Service } | undefined; publicUrl: string }) {
  const { x402, publicUrl } = deps;
  return {
    enabled: x402 !== undefined,
    /** The 402 PAYMENT_REQUIRED (with PAYMENT-REQUIRED) for this call; undefined when x402 is off. */
    async required(request: FastifyRequest, call: PricedCall): Promise<AppError | undefined> {
      return x402 && x402.service.paymentRequired(resourceOf(request, x402.service, publicUrl, call));
    },
    /** The request's payment bound to this call's price: the actor's PaidCall and the gate the commit verifies and settles. */
    bind(request: FastifyRequest, call: PricedCall): { paid: PaidCall; gate: PaymentGate } | undefined {
      const p = request.x402Payer;
      if (!x402 || !p) return undefined;
      return x402.service.paymentFor({ ...resourceOf(request, x402.service, publicUrl, call), ...p, requestId: request.id });
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
  const offer = await x402.service.paymentRequired(resourceOf(request, x402.service, publicUrl)).catch(() => undefined);
  return offer ? new AppError(err.code, err.message, err.extras, { ...err.headers, ...offer.headers }) : err;
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
  const chainId = /^eip155:(\d+)$/.exec(config.network)?.[1];
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
