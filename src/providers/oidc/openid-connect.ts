import * as client from 'openid-client';
import { AppError } from '../../errors.js';
import type { OidcClient, OidcFlow, OidcIdentity, OidcOptions } from './index.js';

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);
const SCOPE = 'openid email profile';

/** Codes of an answer that arrived but did not check out (a replayed code, a wrong nonce, a bad signature). */
const REFUSED_ANSWERS = new Set([
  'OAUTH_JWT_TIMESTAMP_CHECK_FAILED',
  'OAUTH_JWT_CLAIM_COMPARISON_FAILED',
  'OAUTH_JSON_ATTRIBUTE_COMPARISON_FAILED',
  'OAUTH_INVALID_RESPONSE',
  'OAUTH_INVALID_REQUEST',
  'OAUTH_PARSE_ERROR',
  'OAUTH_KEY_SELECTION_FAILED',
  'OAUTH_JWT_USERINFO_EXPECTED',
  'ERR_JWS_SIGNATURE_VERIFICATION_FAILED',
]);

const unavailable = () => new AppError('SIGN_IN_PROVIDER_UNAVAILABLE', 'The sign-in provider cannot be reached right now; try again in a minute');

/**
 * The OpenID Connect client on openid-client 6: discovery on the first sign-in (not at start, so a
 * provider that is down does not stop Signet), kept once it succeeded, tried again after a failure.
 * The client authenticates with client_secret_basic, the method every provider must support
 * (RFC 6749 §2.3.1).
 */
export function createOpenIdConnectClient(opts: OidcOptions): OidcClient {
  const issuerUrl = new URL(opts.issuer);
  // A rule, not a test switch: plain http only to a provider on this machine (config refuses any other).
  const insecure = issuerUrl.protocol === 'http:' && LOOPBACK_HOSTS.has(issuerUrl.hostname);
  let discovered: Promise<client.Configuration> | undefined;

  function configuration(): Promise<client.Configuration> {
    discovered ??= client
      .discovery(issuerUrl, opts.clientId, { client_secret: opts.clientSecret }, client.ClientSecretBasic(opts.clientSecret), {
        timeout: opts.timeoutSeconds ?? 10,
        ...(insecure && { execute: [client.allowInsecureRequests] }),
      })
      .catch((err) => {
        discovered = undefined;
        opts.onError?.(err, 'discovery');
        throw unavailable();
      });
    return discovered;
  }

  return {
    issuer: opts.issuer,

    async authorizationUrl(flow: OidcFlow): Promise<string> {
      const config = await configuration();
      return client.buildAuthorizationUrl(config, {
        redirect_uri: opts.redirectUri,
        scope: SCOPE,
        state: flow.state,
        nonce: flow.nonce,
        code_challenge: await client.calculatePKCECodeChallenge(flow.codeVerifier),
        code_challenge_method: 'S256',
      }).href;
    },

    async callback(currentUrl: URL, flow: OidcFlow): Promise<OidcIdentity> {
      const config = await configuration();
      try {
        const tokens = await client.authorizationCodeGrant(config, currentUrl, {
          pkceCodeVerifier: flow.codeVerifier,
          expectedState: flow.state,
          expectedNonce: flow.nonce,
          idTokenExpected: true,
        });
        const idToken = tokens.claims();
        if (!idToken) throw new AppError('SIGN_IN_FAILED', 'The provider sent no ID token');
        // Many providers put email and name only in UserInfo for the code flow (oidc-provider does).
        let claims: Record<string, unknown> = idToken;
        if (typeof idToken.email !== 'string' && config.serverMetadata().userinfo_endpoint) {
          claims = { ...(await client.fetchUserInfo(config, tokens.access_token, idToken.sub)), ...idToken };
        }
        const email = typeof claims.email === 'string' && /^[^\s@]+@[^\s@]+$/.test(claims.email.trim()) ? claims.email.trim().toLowerCase().slice(0, 254) : null;
        const name = typeof claims.name === 'string' && claims.name.trim() ? claims.name.trim().slice(0, 200) : null;
        return {
          issuer: config.serverMetadata().issuer,
          subject: idToken.sub,
          email,
          // Some providers send the boolean as a string.
          emailVerified: email !== null && (claims.email_verified === true || claims.email_verified === 'true'),
          name,
        };
      } catch (err) {
        if (!(err instanceof AppError)) opts.onError?.(err, 'callback');
        throw classify(err);
      }
    },
  };
}

/** The provider's failure as one of ours: it said no, its answer did not check out, or it could not be reached. */
function classify(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof client.AuthorizationResponseError) {
    const code = /^[\w.-]{1,64}$/.test(err.error) ? err.error : 'error';
    return new AppError('SIGN_IN_REFUSED', `The sign-in was not completed at the provider (${code})`, { providerError: code });
  }
  if (err instanceof client.ResponseBodyError) {
    return err.status >= 500 ? unavailable() : new AppError('SIGN_IN_FAILED', 'The provider did not accept this sign-in (it may have been used already); start again');
  }
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && REFUSED_ANSWERS.has(code)) {
    return new AppError('SIGN_IN_FAILED', 'The answer from the sign-in provider did not check out; start again');
  }
  // Network errors, timeouts, non-JSON or unexpected statuses: the provider is not answering properly.
  return unavailable();
}
