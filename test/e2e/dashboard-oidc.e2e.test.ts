// test-lane: once (pages in Chromium; the routes behind them run on both stores in their own files)
/**
 * Dashboard sign-in through a real OpenID Connect provider (oidc-provider, on 127.0.0.1, one client,
 * its built-in development login and consent pages) in a real Chromium against the real server:
 * discovery retried after the provider was down, sign-up, a second sign-in of the same subject,
 * an existing customer's verified address, an unverified address (before and after its owner's),
 * no address, a cancel at the provider, and a callback that does not belong to the browser (no flow
 * cookie, another state).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import type { BrowserContextOptions, Page } from 'playwright-core';
import { auditLog, customerIdentities, customers, dashboardSessions } from '../../src/db/schema/index.js';
import { OIDC_CLIENT, startOidcProvider, type OidcUser, type TestOidcProvider } from '../fixtures/oidc-provider.js';
import { createTestApp, type TestApp } from '../harness.js';
import { artifactPath, freePort, launchChromium } from './helpers.js';

const DESKTOP: BrowserContextOptions = { viewport: { width: 1280, height: 800 } };
const PHONE: BrowserContextOptions = { viewport: { width: 375, height: 740 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true };

/** The provider's users: the login typed on its dev form is the subject. */
const USERS: Record<string, OidcUser> = {
  pat: { email: 'Pat.Person@Example.com', email_verified: true, name: 'Pat Person' },
  noemail: { name: 'No Email' },
  claimer: { email: 'sam.owner@example.com', email_verified: false, name: 'Not Sam' },
  sam: { email: 'Sam.Owner@example.com', email_verified: true, name: 'Sam Owner' },
};

describe('dashboard sign-in with OpenID Connect in Chromium', () => {
  let t: TestApp;
  let base: string;
  let issuer: string;
  let idpPort: number;
  let idp: TestOidcProvider | undefined;
  const browsers: { close: () => Promise<void> }[] = [];
  let existingEmail: string;

  before(async () => {
    idpPort = await freePort();
    issuer = `http://127.0.0.1:${idpPort}`;
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    t = await createTestApp({
      env: { PUBLIC_URL: base, OIDC_ISSUER: issuer, OIDC_CLIENT_ID: OIDC_CLIENT.client_id, OIDC_CLIENT_SECRET: OIDC_CLIENT.client_secret, OIDC_PROVIDER_NAME: 'Local IdP' },
    });
    await t.app.listen({ host: '127.0.0.1', port });
    [existingEmail] = (await t.container.db.select({ email: customers.email }).from(customers).where(eq(customers.id, t.customer.id))).map((r) => r.email);
    USERS.existing = { email: existingEmail.toUpperCase(), email_verified: true, name: 'Existing Customer' };
    USERS.unverified = { email: existingEmail, email_verified: false };
  });

  after(async () => {
    for (const b of browsers) await b.close().catch(() => {});
    await t?.close();
    await idp?.close();
  });

  async function startProvider(): Promise<void> {
    idp = await startOidcProvider({ redirectUri: `${base}/dashboard/auth/callback`, users: USERS, port: idpPort });
  }

  async function newPage(options: BrowserContextOptions = DESKTOP): Promise<Page> {
    const browser = await launchChromium(options);
    browsers.push(browser);
    return browser.context.newPage();
  }

  /** Sign in through the provider's dev pages as `login`; resolves on our page the flow ends on. */
  async function signInAs(page: Page, login: string, opts: { returnTo?: string; shot?: string } = {}): Promise<void> {
    await page.goto(`${base}/dashboard/sign-in${opts.returnTo ? `?returnTo=${encodeURIComponent(opts.returnTo)}` : ''}`);
    if (opts.shot) await page.screenshot({ path: artifactPath(`dashboard-sign-in-oidc-${opts.shot}.png`), fullPage: true });
    await page.getByRole('button', { name: 'Sign in with Local IdP' }).click();
    await page.waitForURL(`${issuer}/**`);
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any password');
    await page.locator('button[type="submit"]').click();
    // The consent prompt (first time for this browser), then back to us.
    const consent = page.getByRole('button', { name: 'Continue' });
    await Promise.race([consent.waitFor({ timeout: 60_000 }).then(() => consent.click()), page.waitForURL(`${base}/**`, { timeout: 60_000 })]);
    await page.waitForURL(`${base}/**`);
    await page.waitForLoadState('load');
  }

  const customersWith = (email: string) => t.container.db.select().from(customers).where(sql`lower(${customers.email}) = ${email.toLowerCase()}`);

  test('discovery waits for the first sign-in and is tried again after the provider was down', async () => {
    const res = await fetch(`${base}/dashboard/sign-in/oidc`, { redirect: 'manual' });
    assert.equal(res.status, 503);
    assert.match(await res.text(), /SIGN_IN_PROVIDER_UNAVAILABLE/);
    await startProvider();
    const again = await fetch(`${base}/dashboard/sign-in/oidc`, { redirect: 'manual' });
    assert.equal(again.status, 303);
    assert.match(again.headers.get('location')!, new RegExp(`^${issuer}/auth\\?`));
  });

  test('the first sign-in creates the account and lands on the dashboard signed in; the same subject signs in again to it', async () => {
    for (const [label, options] of [['1280', DESKTOP], ['375', PHONE]] as const) {
      const page = await newPage(options);
      await signInAs(page, 'pat', { returnTo: '/dashboard/keys', shot: label });
      assert.equal(new URL(page.url()).pathname, '/dashboard/keys');
      await page.getByRole('button', { name: 'Sign out' }).waitFor();
      assert.match((await page.locator('.account-email').textContent()) ?? '', /pat\.person@example\.com/);
      const cookies = await page.context().cookies(base);
      const session = cookies.find((c) => c.name === 'svc_session');
      assert.ok(session?.httpOnly && session.sameSite === 'Lax' && session.path === '/');
      assert.equal(cookies.find((c) => c.name === 'svc_oidc_flow'), undefined, 'the flow cookie is gone');
    }
    const [customer, ...others] = await customersWith('pat.person@example.com');
    assert.equal(others.length, 0, 'the second sign-in reused the customer');
    assert.equal(customer.email, 'pat.person@example.com');
    assert.equal(customer.name, 'Pat Person');
    const identities = await t.container.db.select().from(customerIdentities).where(eq(customerIdentities.customerId, customer.id));
    assert.deepEqual(identities.map((i) => [i.issuer, i.subject]), [[issuer, 'pat']]);
    const actions = await t.container.db.select({ action: auditLog.action, metadata: auditLog.metadata }).from(auditLog).where(eq(auditLog.customerId, customer.id)).orderBy(auditLog.id);
    assert.deepEqual(actions.map((a) => [a.action, (a.metadata as { method: string }).method]), [
      ['customer.sign_up', 'oidc'],
      ['dashboard.sign_in', 'oidc'],
      ['dashboard.sign_in', 'oidc'],
    ]);
    const sessions = await t.container.db.select().from(dashboardSessions).where(eq(dashboardSessions.customerId, customer.id));
    assert.deepEqual(sessions.map((s) => s.method), ['oidc', 'oidc']);
  });

  test("a verified address of an existing customer signs into that customer; an unverified one gets its own account", async () => {
    const page = await newPage();
    await signInAs(page, 'existing');
    assert.equal(new URL(page.url()).pathname, '/dashboard');
    const [identity] = await t.container.db.select().from(customerIdentities).where(eq(customerIdentities.subject, 'existing'));
    assert.equal(identity.customerId, t.customer.id);

    const other = await newPage();
    await signInAs(other, 'unverified');
    const [unverified] = await t.container.db.select().from(customerIdentities).where(eq(customerIdentities.subject, 'unverified'));
    assert.notEqual(unverified.customerId, t.customer.id, 'an unverified address does not reach the existing account');
    assert.deepEqual((await customersWith(existingEmail)).map((c) => [c.id === t.customer.id, c.emailVerified]).sort(), [[false, false], [true, true]]);
  });

  test("an address claimed unverified first: its owner's verified sign-in lands in an account of their own", async () => {
    const claimer = await newPage();
    await signInAs(claimer, 'claimer');
    assert.equal(new URL(claimer.url()).pathname, '/dashboard');
    const owner = await newPage();
    await signInAs(owner, 'sam');
    assert.equal(new URL(owner.url()).pathname, '/dashboard');
    const bound = await t.container.db.select().from(customerIdentities).where(sql`${customerIdentities.subject} IN ('claimer', 'sam')`).orderBy(customerIdentities.subject);
    assert.equal(bound.length, 2);
    assert.notEqual(bound[0].customerId, bound[1].customerId, 'two accounts, one per identity');
    const accounts = await customersWith('sam.owner@example.com');
    assert.deepEqual(accounts.map((c) => [c.id === bound[1].customerId ? 'sam' : 'claimer', c.emailVerified]).sort(), [['claimer', false], ['sam', true]]);
  });

  test('no email from the provider, or a cancel there, is a clear page leading back to sign-in', async () => {
    const page = await newPage();
    await signInAs(page, 'noemail');
    assert.equal(new URL(page.url()).pathname, '/dashboard/auth/callback');
    await page.getByRole('heading', { name: 'No email address' }).waitFor();
    assert.match(await page.content(), /SIGN_IN_EMAIL_MISSING/);
    await page.screenshot({ path: artifactPath('dashboard-sign-in-oidc-no-email-1280.png'), fullPage: true });

    const cancel = await newPage();
    await cancel.goto(`${base}/dashboard/sign-in`);
    await cancel.getByRole('button', { name: 'Sign in with Local IdP' }).click();
    await cancel.waitForURL(`${issuer}/**`);
    await cancel.getByRole('link', { name: '[ Cancel ]' }).click();
    await cancel.waitForURL(`${base}/**`);
    await cancel.getByRole('heading', { name: 'Sign-in cancelled' }).waitFor();
    assert.match(await cancel.content(), /SIGN_IN_REFUSED/);
    await cancel.getByRole('button', { name: 'Back to sign in' }).click();
    await cancel.waitForURL(`${base}/dashboard/sign-in`);
  });

  test('a callback that does not belong to this browser is refused: no flow cookie, or another state', async () => {
    const start = await fetch(`${base}/dashboard/sign-in/oidc`, { redirect: 'manual' });
    assert.equal(start.status, 303);
    const flowCookie = start.headers.getSetCookie().find((c) => c.startsWith('svc_oidc_flow='))!;
    assert.match(flowCookie, /; Max-Age=600; Path=\/dashboard; HttpOnly; SameSite=Lax/);
    const cookie = flowCookie.split(';')[0];
    const state = new URL(start.headers.get('location')!).searchParams.get('state')!;

    // Another browser (no flow cookie) arriving with this flow's state and a code.
    const noCookie = await fetch(`${base}/dashboard/auth/callback?code=abc&state=${state}&iss=${encodeURIComponent(issuer)}`, { redirect: 'manual' });
    assert.equal(noCookie.status, 400);
    assert.match(await noCookie.text(), /SIGN_IN_FLOW_INVALID/);

    // This browser's cookie with another state (an attacker's code and state): refused, and the flow is spent.
    const wrongState = await fetch(`${base}/dashboard/auth/callback?code=abc&state=not-${state}&iss=${encodeURIComponent(issuer)}`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(wrongState.status, 400);
    assert.match(await wrongState.text(), /SIGN_IN_FLOW_INVALID/);
    const replay = await fetch(`${base}/dashboard/auth/callback?code=abc&state=${state}&iss=${encodeURIComponent(issuer)}`, { headers: { cookie }, redirect: 'manual' });
    assert.equal(replay.status, 400, 'one use per flow');
  });
});
