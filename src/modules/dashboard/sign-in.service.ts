import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { RequestContext } from '../../context.js';
import type { Db, DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { enqueue } from '../../jobs/queue.js';
import { safeEqual, sha256Hex } from '../../lib/crypto.js';
import { LINK_TOKEN_PATTERN, createLinkTokens } from '../../lib/link-tokens.js';
import type { EmailMessage } from '../../providers/email/index.js';
import type { OidcClient, OidcIdentity } from '../../providers/oidc/index.js';
import { signInEmail } from '../../web/dashboard/sign-in-email.js';
import type { AccountRepo, CustomerRow } from '../account/account.repo.js';
import type { AuditService } from '../audit/audit.service.js';
import { safeReturnTo } from './dashboard-http.js';
import { SEND_SIGN_IN_LINK_JOB } from './sign-in.jobs.js';
import type { SignInRepo, SignInRow } from './sign-in.repo.js';
import { SESSION_IDLE_MS, type SessionsService } from './sessions.service.js';

export const LINK_TTL_MS = 15 * 60_000;
export const FLOW_TTL_MS = 10 * 60_000;
/**
 * Emailed links in any hour, per address from one IP and per IP: enough for a person, too few to flood
 * a mailbox from one network. The address's count is per requester so that nobody else can use up its
 * owner's links (a lockout); what another network can still send is bounded by its own per-IP count.
 */
export const LINKS_PER_ADDRESS_PER_IP_PER_HOUR = 5;
export const LINKS_PER_IP_PER_HOUR = 20;
/** OpenID Connect starts per IP in any hour: each writes a row, so they are bounded too. */
export const FLOWS_PER_IP_PER_HOUR = 60;
const HOUR_MS = 3_600_000;
/** Housekeeping: attempts are kept a day (the rate limits look back an hour); ended sessions a week. */
const SIGN_IN_RETENTION_MS = 24 * HOUR_MS;
const ENDED_SESSION_RETENTION_MS = 7 * 24 * HOUR_MS;
/** The OpenID Connect flow cookie is 256 random bits, like the session's. */
const FLOW_TOKEN = /^[A-Za-z0-9_-]{43}$/;

const ZEmail = z.email().max(254);

/** Who is at the browser: what the session row and the audit rows record. */
export type SignInRequest = { ip: string; userAgent: string | null; requestId: string };
export type SignedIn = { sessionToken: string; returnTo: string; customerId: string; created: boolean };

type Deps = {
  db: Db;
  repo: SignInRepo;
  accounts: Pick<AccountRepo, 'insertCustomer' | 'findCustomer'>;
  sessions: Pick<SessionsService, 'create' | 'revoke'>;
  audit: Pick<AuditService, 'customer'>;
  /** Unset: emailed links only. */
  oidc: OidcClient | undefined;
  signingLinkSecret: string;
  dashboardUrl: string;
  sandboxLimit: number;
  now: () => Date;
};

const linkInvalid = () => new AppError('SIGN_IN_LINK_INVALID', 'This sign-in link is not valid any more: it was used already, is older than 15 minutes, or was never issued. Ask for a new one.');
const flowInvalid = () => new AppError('SIGN_IN_FLOW_INVALID', 'This sign-in did not start in this browser, or it took longer than 10 minutes. Start again.');

function rateLimited(oldest: Date | null, now: Date, what: string): AppError {
  const seconds = Math.max(1, Math.ceil(((oldest?.getTime() ?? now.getTime()) + HOUR_MS - now.getTime()) / 1000));
  const minutes = Math.ceil(seconds / 60);
  return new AppError('RATE_LIMITED', `${what}; try again in ${minutes} minute${minutes === 1 ? '' : 's'}`, { retryAfterSeconds: seconds }, { 'Retry-After': String(seconds) });
}

/**
 * Dashboard sign-in and sign-up: an emailed single-use link, or OpenID Connect (code + PKCE, state,
 * nonce). The first sign-in of an address creates its customer, with no API key (keys are minted only
 * on the keys page). Every attempt is a dashboard_sign_ins row, spent by one conditional UPDATE, and
 * the rows double as the rate-limit record.
 */
export function createSignInService(deps: Deps) {
  const links = createLinkTokens(deps.signingLinkSecret, 'dashboard-sign-in');
  const linkUrl = (salt: string) => `${deps.dashboardUrl}/sign-in/email/${links.token(salt)}`;
  const redirectUri = `${deps.dashboardUrl}/auth/callback`;

  /** The customer of a signed-in browser as an audit actor. */
  const contextOf = (customerId: string, req: SignInRequest): RequestContext => ({
    actor: { customerId, mode: 'live', via: 'session', keyId: null },
    requestId: req.requestId,
    ip: req.ip,
    testModeHeader: false,
  });

  /**
   * The account of an address this sign-in proved (an emailed link, or a provider that verified it),
   * created on its first sign-in with the address verified. An account whose address was never
   * verified is not found: whoever made it did not prove the address, so it is not its owner's. The
   * advisory lock on the address makes two first sign-ins racing (two links, two tabs, link and OIDC)
   * agree on one customer.
   */
  async function findOrCreateByEmail(tx: Tx, email: string, name: string | null): Promise<{ customer: CustomerRow; created: boolean }> {
    await deps.repo.lock(tx, `email:${email}`);
    const existing = await deps.repo.findCustomerByEmail(tx, email);
    if (existing) return { customer: existing, created: false };
    const customer = await deps.accounts.insertCustomer(tx, { email, emailVerified: true, name: name ?? email.split('@')[0], sandboxLimit: deps.sandboxLimit });
    return { customer, created: true };
  }

  async function startSession(tx: Tx, customer: CustomerRow, created: boolean, method: 'email' | 'oidc', req: SignInRequest): Promise<string> {
    const ctx = contextOf(customer.id, req);
    if (created) await deps.audit.customer(tx, ctx, { action: 'customer.sign_up', resourceType: 'customer', resourceId: customer.id, metadata: { method } });
    const { token, session } = await deps.sessions.create(tx, { customerId: customer.id, method, ip: req.ip, userAgent: req.userAgent });
    await deps.audit.customer(tx, ctx, { action: 'dashboard.sign_in', resourceType: 'dashboard_session', resourceId: session.id, metadata: { method } });
    return token;
  }

  return {
    emailEnabled: deps.oidc === undefined,
    oidcEnabled: deps.oidc !== undefined,

    /**
     * Mails a sign-in link. The row and the job that mails it commit together; the answer is the same
     * whether or not the address has an account (the first sign-in creates it).
     */
    async requestEmailLink(input: { email: unknown; returnTo: unknown; ip: string }): Promise<{ sentTo: string }> {
      const parsed = ZEmail.safeParse(typeof input.email === 'string' ? input.email.trim().toLowerCase() : input.email);
      if (!parsed.success) throw new AppError('VALIDATION_ERROR', 'Enter an email address like name@example.com', { details: [{ path: 'body.email', message: 'not an email address' }] });
      const email = parsed.data;
      const now = deps.now();
      const since = new Date(now.getTime() - HOUR_MS);
      const salt = links.newSalt();
      await deps.db.transaction(async (tx) => {
        // Counted under locks, so concurrent requests cannot all slip under a limit.
        await deps.repo.lock(tx, `ip:${input.ip}`);
        await deps.repo.lock(tx, `email:${email}`);
        const byIp = await deps.repo.countSince(tx, 'email', { ip: input.ip }, since);
        if (byIp.n >= LINKS_PER_IP_PER_HOUR) throw rateLimited(byIp.oldest, now, 'Too many sign-in links were asked for from this network');
        const byAddress = await deps.repo.countSince(tx, 'email', { email, ip: input.ip }, since);
        if (byAddress.n >= LINKS_PER_ADDRESS_PER_IP_PER_HOUR) throw rateLimited(byAddress.oldest, now, 'Too many sign-in links were asked for this address from this network');
        const row = await deps.repo.insert(tx, {
          kind: 'email',
          tokenHash: links.hash(links.token(salt)),
          linkSalt: salt,
          email,
          returnTo: safeReturnTo(input.returnTo),
          ip: input.ip,
          createdAt: now,
          expiresAt: new Date(now.getTime() + LINK_TTL_MS),
        });
        await enqueue(tx, { type: SEND_SIGN_IN_LINK_JOB, payload: { signInId: row.id }, maxAttempts: 5 });
      });
      return { sentTo: email };
    },

    /** The send job's message: only while the link is still live (a late or repeated run mails nothing stale). */
    async linkMessage(db: DbOrTx, signInId: string): Promise<EmailMessage | undefined> {
      const row = await deps.repo.findById(db, signInId);
      if (!row || row.kind !== 'email' || !row.email || !row.linkSalt || row.usedAt || row.expiresAt.getTime() <= deps.now().getTime()) return undefined;
      return signInEmail(row.email, linkUrl(row.linkSalt), LINK_TTL_MS / 60_000);
    },

    /** The confirm page's check (a GET spends nothing: mail scanners open links). */
    async checkEmailLink(token: string): Promise<{ email: string }> {
      if (!LINK_TOKEN_PATTERN.test(token)) throw linkInvalid();
      const row = await deps.repo.findLive(deps.db, 'email', links.hash(token), deps.now());
      if (!row?.email) throw linkInvalid();
      return { email: row.email };
    },

    /** The confirm button: spends the link, finds or creates the customer, opens the session, in one transaction. */
    async completeEmailLink(token: string, req: SignInRequest): Promise<SignedIn> {
      if (!LINK_TOKEN_PATTERN.test(token)) throw linkInvalid();
      return deps.db.transaction(async (tx) => {
        const row = await deps.repo.consume(tx, 'email', links.hash(token), deps.now());
        if (!row?.email) throw linkInvalid();
        const { customer, created } = await findOrCreateByEmail(tx, row.email, null);
        const sessionToken = await startSession(tx, customer, created, 'email', req);
        return { sessionToken, returnTo: safeReturnTo(row.returnTo), customerId: customer.id, created };
      });
    },

    /**
     * Sends the browser to the provider. The row keeps state, nonce and the PKCE verifier; the browser
     * keeps a random flow token (a cookie) whose hash names the row, so only this browser can finish.
     */
    async startOidc(input: { returnTo: unknown; ip: string }): Promise<{ flowToken: string; url: string }> {
      const oidc = deps.oidc;
      if (!oidc) throw new AppError('NOT_FOUND', 'Sign-in through an OpenID Connect provider is not configured here');
      const now = deps.now();
      const byIp = await deps.repo.countSince(deps.db, 'oidc', { ip: input.ip }, new Date(now.getTime() - HOUR_MS));
      if (byIp.n >= FLOWS_PER_IP_PER_HOUR) throw rateLimited(byIp.oldest, now, 'Too many sign-ins were started from this network');
      const flow = { state: random(), nonce: random(), codeVerifier: random() };
      // Before the row: the provider may be unreachable (discovery), and then nothing is stored.
      const url = await oidc.authorizationUrl(flow);
      const flowToken = random();
      await deps.repo.insert(deps.db, {
        kind: 'oidc',
        tokenHash: sha256Hex(flowToken),
        oidcState: flow.state,
        oidcNonce: flow.nonce,
        oidcCodeVerifier: flow.codeVerifier,
        returnTo: safeReturnTo(input.returnTo),
        ip: input.ip,
        createdAt: now,
        expiresAt: new Date(now.getTime() + FLOW_TTL_MS),
      });
      return { flowToken, url };
    },

    /**
     * The provider's redirect back. The flow row is spent first (one use, this browser only), then the
     * provider is asked (outside any transaction), then the account is found or created and the
     * session opened in one transaction.
     */
    async completeOidc(input: { flowToken: string | undefined; query: URLSearchParams } & SignInRequest): Promise<SignedIn> {
      const oidc = deps.oidc;
      if (!oidc) throw new AppError('NOT_FOUND', 'Sign-in through an OpenID Connect provider is not configured here');
      if (!input.flowToken || !FLOW_TOKEN.test(input.flowToken)) throw flowInvalid();
      const row = await deps.repo.consume(deps.db, 'oidc', sha256Hex(input.flowToken), deps.now());
      if (!row?.oidcState || !row.oidcNonce || !row.oidcCodeVerifier) throw flowInvalid();
      // Login CSRF: a callback carrying another flow's state (an attacker's code) is refused before the provider is asked.
      const state = input.query.get('state');
      if (!state || !safeEqual(state, row.oidcState)) throw flowInvalid();
      const currentUrl = new URL(redirectUri);
      currentUrl.search = input.query.toString();
      const identity = await oidc.callback(currentUrl, { state: row.oidcState, nonce: row.oidcNonce, codeVerifier: row.oidcCodeVerifier });
      return deps.db.transaction(async (tx) => {
        const { customer, created } = await customerOfIdentity(tx, identity, input);
        const sessionToken = await startSession(tx, customer, created, 'oidc', input);
        return { sessionToken, returnTo: safeReturnTo(row.returnTo), customerId: customer.id, created };
      });
    },

    /** Sign-out: the row is revoked (the cookie is worthless from now on), with its audit row. */
    async signOut(sessionToken: string | undefined, req: SignInRequest): Promise<void> {
      await deps.db.transaction(async (tx) => {
        const session = await deps.sessions.revoke(tx, sessionToken);
        if (session) await deps.audit.customer(tx, contextOf(session.customerId, req), { action: 'dashboard.sign_out', resourceType: 'dashboard_session', resourceId: session.id });
      });
    },

    /** Periodic housekeeping: old attempts and long-ended sessions. */
    async purge(tx: DbOrTx): Promise<{ signIns: number; sessions: number }> {
      const now = deps.now().getTime();
      return deps.repo.purge(tx, {
        signInsBefore: new Date(now - SIGN_IN_RETENTION_MS),
        sessionsEndedBefore: new Date(now - ENDED_SESSION_RETENTION_MS),
        idleMs: SESSION_IDLE_MS,
      });
    },
  };

  /**
   * An identity already bound signs into its customer. Otherwise an address the provider verified
   * signs into the account that address has (and binds the identity to it), or makes it; an unverified
   * address gets an account of its own whose address stays unverified, which no later sign-in of that
   * address reaches. Anyone can type any address at some providers: the first to type it must not own
   * the account its real owner lands in afterwards.
   */
  async function customerOfIdentity(tx: Tx, identity: OidcIdentity, req: SignInRequest): Promise<{ customer: CustomerRow; created: boolean }> {
    await deps.repo.lock(tx, `oidc:${identity.issuer} ${identity.subject}`);
    const bound = await deps.repo.findIdentity(tx, identity.issuer, identity.subject);
    const boundCustomer = bound && (await deps.accounts.findCustomer(tx, bound.customerId));
    if (boundCustomer) return { customer: await verifiedByOwnIdentity(tx, boundCustomer, identity, req), created: false };
    if (!identity.email) throw new AppError('SIGN_IN_EMAIL_MISSING', 'The sign-in provider did not share an email address, which a new account needs. Allow it to share your email and try again.');
    let found: { customer: CustomerRow; created: boolean };
    if (identity.emailVerified) {
      found = await findOrCreateByEmail(tx, identity.email, identity.name);
    } else {
      const customer = await deps.accounts.insertCustomer(tx, { email: identity.email, emailVerified: false, name: identity.name ?? identity.email.split('@')[0], sandboxLimit: deps.sandboxLimit });
      found = { customer, created: true };
    }
    await deps.repo.bindIdentity(tx, { issuer: identity.issuer, subject: identity.subject, customerId: found.customer.id, email: identity.email, createdAt: deps.now() });
    return found;
  }

  /**
   * An account whose address is unverified (made by an unverified claim, or left so by migration 0010)
   * becomes that address's account when its own identity's provider now verifies the address, unless
   * another account has it verified already: that one stays the address's account.
   */
  async function verifiedByOwnIdentity(tx: Tx, customer: CustomerRow, identity: OidcIdentity, req: SignInRequest): Promise<CustomerRow> {
    if (customer.emailVerified || !identity.emailVerified || identity.email !== customer.email.toLowerCase()) return customer;
    await deps.repo.lock(tx, `email:${identity.email}`);
    if (await deps.repo.findCustomerByEmail(tx, identity.email)) return customer;
    const verified = await deps.repo.markEmailVerified(tx, customer.id);
    await deps.audit.customer(tx, contextOf(customer.id, req), { action: 'customer.email_verified', resourceType: 'customer', resourceId: customer.id, metadata: { method: 'oidc', issuer: identity.issuer } });
    return verified;
  }
}

const random = () => randomBytes(32).toString('base64url');

export type SignInService = ReturnType<typeof createSignInService>;
