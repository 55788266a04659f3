/** Who is calling. Every customer auth mode (API key now; wallet JWT, x402, dashboard cookie later) resolves to this. */
export type Actor = Readonly<{
  customerId: string;
  /** Test-mode callers see only test-mode data and are never charged. */
  mode: 'live' | 'test';
  via: 'api_key' | 'wallet_jwt' | 'x402' | 'session';
  /** The API key's id and display prefix when via is api_key. */
  keyId: string | null;
  keyPrefix?: string;
  walletAddress?: string;
}>;

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
