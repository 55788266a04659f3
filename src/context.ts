/** Who is calling. Every customer auth mode (API key now; wallet JWT, x402, dashboard cookie later) resolves to this. */
export type Actor = Readonly<{
  customerId: string;
  /** Test-mode callers see only test-mode data and are never charged. */
  mode: 'live' | 'test';
  /** signing_link: a recipient acting through their link on the account's behalf (a delegation's verification). */
  via: 'api_key' | 'wallet_jwt' | 'x402' | 'session' | 'prepare_link' | 'signing_link';
  /** The API key's id and display prefix when via is api_key. */
  keyId: string | null;
  keyPrefix?: string;
  walletAddress?: string;
  /** via x402: the call's payment, which the billing charge describes and the commit settles. */
  payment?: PaidCall;
}>;

/**
 * An x402 call's payment (modules/x402). The price is fixed before the call runs (it is what the payer
 * signed); the charge only says what it bought, and the settlement writes the ledger row with its txHash.
 */
export interface PaidCall {
  readonly priceMicros: bigint;
  describe(what: { operation: string; description: string; envelopeId: string | null; envelopeTitle: string | null }): void;
}

/** What a service needs to know about the request it serves: the caller and what the audit row records. */
export type RequestContext = Readonly<{
  actor: Actor;
  requestId: string;
  ip: string;
  /** X-Service-Test-Mode: true, a free test send on create-and-send. */
  testModeHeader: boolean;
}>;

/** Operator-side callers: the ops token, a sibling product's X-S2S-Key, or the system itself (jobs). */
export type OperatorContext = Readonly<{
  actorType: 'operator' | 's2s' | 'system';
  requestId: string | null;
  ip: string | null;
}>;

/** A page of a list, as the caller asked for it: limit/offset, or the Alt page/perPage. */
export type Paging =
  | { style: 'offset'; limit: number; offset: number }
  | { style: 'page'; limit: number; offset: number; page: number; perPage: number };
