/** What the dashboard keeps between sending the browser to the provider and its coming back. */
export type OidcFlow = { state: string; nonce: string; codeVerifier: string };

/** Who the provider says signed in. `email` is lower-cased; null when the provider sent none. */
export type OidcIdentity = { issuer: string; subject: string; email: string | null; emailVerified: boolean; name: string | null };

/**
 * Dashboard sign-in through an OpenID Connect provider: authorization code with PKCE (S256), state and
 * nonce. The real adapter is openid-client (./openid-connect.ts); tests run a real provider locally.
 * Failures are AppErrors: SIGN_IN_PROVIDER_UNAVAILABLE (unreachable, 5xx), SIGN_IN_REFUSED (the
 * provider answered with an error, e.g. access_denied), SIGN_IN_FAILED (its answer did not check out).
 */
export interface OidcClient {
  /** The issuer's host, for "Sign in with …" when no name is configured. */
  readonly issuer: string;
  /** Where to send the browser; discovers the provider on first use. */
  authorizationUrl(flow: OidcFlow): Promise<string>;
  /** Checks the redirect back (state, iss, code with the PKCE verifier, the ID token and its nonce) and reads the identity. */
  callback(currentUrl: URL, flow: OidcFlow): Promise<OidcIdentity>;
}

export type OidcOptions = {
  issuer: string;
  clientId: string;
  clientSecret: string;
  redirectUri: string;
  timeoutSeconds?: number;
  /** Told why a discovery or callback failed (the caller sees only a short code; operators need the cause). */
  onError?: (err: unknown, during: 'discovery' | 'callback') => void;
};

/**
 * openid-client (with oauth4webapi, some 3 MiB) is imported with the first sign-in through the
 * provider, not with the server: OIDC_* is off by default (docs/operating.md: Memory).
 */
export function createOidcClient(opts: OidcOptions): OidcClient {
  let real: Promise<OidcClient> | undefined;
  const load = () => (real ??= import('./openid-connect.js').then((m) => m.createOpenIdConnectClient(opts)));
  return {
    issuer: opts.issuer,
    authorizationUrl: async (flow) => (await load()).authorizationUrl(flow),
    callback: async (currentUrl, flow) => (await load()).callback(currentUrl, flow),
  };
}

