/**
 * Who owns an address (issue 32, item 2): an OpenID Connect sign-in whose provider did not verify the
 * address gets an account of its own that no later sign-in of the address finds, whether the address's
 * owner comes through a provider that verified it or through an emailed link. Through app.inject
 * against the real database and a real OpenID provider (oidc-provider on 127.0.0.1, its login and
 * consent pages walked over HTTP). Two nodes share one database, as an operator who switches from
 * OpenID Connect to emailed links would have: one with the provider, one with emailed links.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { and, eq, inArray, sql } from 'drizzle-orm';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { createContainer } from '../src/container.js';
import { auditLog, customerIdentities, customers, dashboardSessions } from '../src/db/schema/index.js';
import { sha256Hex } from '../src/lib/crypto.js';
import { capturingEmail } from './fixtures/dashboard.js';
import { drain } from './fixtures/envelopes.js';
import { startOidcProvider, type OidcUser, type TestOidcProvider } from './fixtures/oidc-provider.js';
import { createTestApp, testConfig, type TestApp } from './harness.js';

const newAddress = () => `owner-${randomBytes(4).toString('hex')}@example.com`;
const cookieOf = (res: { cookies: { name: string; value: string }[] }, name: string) => res.cookies.find((c) => c.name === name)?.value;

describe('an address the provider did not verify names no account (pre-account takeover)', () => {
  let t: TestApp;
  let oidcApp: FastifyInstance;
  let oidcDataDir: string;
  let idp: TestOidcProvider;
  const email = capturingEmail();
  const users: Record<string, OidcUser> = {};

  before(async () => {
    // The emailed-link node, and the provider's node on the same database.
    t = await createTestApp({ overrides: { email } });
    idp = await startOidcProvider({ redirectUri: `${t.config.dashboardUrl}/auth/callback`, users });
    oidcDataDir = mkdtempSync(path.join(tmpdir(), 'signet-oidc-node-'));
    oidcApp = await buildApp(await createContainer(testConfig(oidcDataDir, idp.env), { database: t.container.database }));
  });
  after(async () => {
    await oidcApp?.close();
    await t?.close();
    await idp?.close();
    if (oidcDataDir) rmSync(oidcDataDir, { recursive: true, force: true });
  });

  const customerOfSession = async (token: string | undefined) => {
    assert.ok(token, 'signed in');
    const [session] = await t.container.db.select().from(dashboardSessions).where(eq(dashboardSessions.tokenHash, sha256Hex(token)));
    const [customer] = await t.container.db.select().from(customers).where(eq(customers.id, session.customerId));
    return customer;
  };

  /** Sign-in through the provider as `login`; the customer it landed in. */
  async function oidcSignIn(login: string) {
    const start = await oidcApp.inject({ url: '/dashboard/sign-in/oidc' });
    assert.equal(start.statusCode, 303, start.body);
    const back = await idp.authorize(String(start.headers.location), login);
    const res = await oidcApp.inject({ url: `${back.pathname}${back.search}`, headers: { cookie: `svc_oidc_flow=${cookieOf(start, 'svc_oidc_flow')}` } });
    assert.equal(res.statusCode, 303, res.body);
    return customerOfSession(cookieOf(res, 'svc_session'));
  }

  /** Sign-in by emailed link on the other node; the customer it landed in. */
  async function linkSignIn(address: string) {
    const page = await t.app.inject({ url: '/dashboard/sign-in' });
    const cookie = `svc_csrf=${cookieOf(page, 'svc_csrf')}`;
    const form = (fields: Record<string, string> = {}) => ({
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({ _csrf: /name="_csrf" value="([^"]+)"/.exec(page.body)![1], ...fields }).toString(),
    });
    const sentBefore = email.sent.length;
    assert.equal((await t.app.inject({ method: 'POST', url: '/dashboard/sign-in/email', ...form({ email: address }) })).statusCode, 200);
    await drain(t);
    const mail = email.sent.slice(sentBefore).find((m) => m.to === address);
    const link = new URL(/http:\/\/\S+\/sign-in\/email\/[A-Za-z0-9_-]{43}/.exec(mail?.text ?? '')![0]).pathname;
    const res = await t.app.inject({ method: 'POST', url: link, ...form() });
    assert.equal(res.statusCode, 303, res.body);
    return customerOfSession(cookieOf(res, 'svc_session'));
  }

  const subjectsOf = async (customerId: string) =>
    (await t.container.db.select({ subject: customerIdentities.subject }).from(customerIdentities).where(eq(customerIdentities.customerId, customerId))).map((r) => r.subject).sort();

  test('unverified first, then the owner through a provider that verified it: the owner gets an account of their own', async () => {
    const address = newAddress();
    users.claimer1 = { email: address.toUpperCase(), email_verified: false, name: 'Someone Else' };
    users.owner1 = { email: address, email_verified: true, name: 'The Owner' };
    const claimed = await oidcSignIn('claimer1');
    const owner = await oidcSignIn('owner1');
    assert.notEqual(owner.id, claimed.id, "the owner's verified sign-in does not land in the account the claim made");
    assert.equal(claimed.email, address);
    assert.equal(claimed.emailVerified, false, 'an unverified address stays unverified on its account');
    assert.equal(owner.emailVerified, true);
    assert.deepEqual(await subjectsOf(claimed.id), ['claimer1']);
    assert.deepEqual(await subjectsOf(owner.id), ['owner1']);
    // Each identity keeps signing into its own account.
    assert.equal((await oidcSignIn('claimer1')).id, claimed.id);
    assert.equal((await oidcSignIn('owner1')).id, owner.id);
  });

  test('unverified first, then the owner by emailed link: the link makes the owner an account with the address verified', async () => {
    const address = newAddress();
    users.claimer2 = { email: address, email_verified: false };
    const claimed = await oidcSignIn('claimer2');
    const owner = await linkSignIn(address);
    assert.notEqual(owner.id, claimed.id, "the owner's link does not land in the account the claim made");
    assert.equal(owner.emailVerified, true, 'an emailed link verifies');
    assert.equal((await linkSignIn(address)).id, owner.id);
    // The address is the owner's now: a provider that verified it signs into the owner's account.
    users.owner2 = { email: address, email_verified: true };
    assert.equal((await oidcSignIn('owner2')).id, owner.id);
    assert.equal((await oidcSignIn('claimer2')).id, claimed.id);
  });

  test("an unverified account becomes its address's account once its own provider verifies the address, unless another account has it already", async () => {
    const address = newAddress();
    users.late = { email: address, email_verified: false };
    const late = await oidcSignIn('late');
    assert.equal(late.emailVerified, false);
    users.late.email_verified = true;
    const again = await oidcSignIn('late');
    assert.equal(again.id, late.id);
    assert.equal(again.emailVerified, true);
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.customerId, late.id), eq(auditLog.action, 'customer.email_verified')));
    assert.equal(audit.length, 1);
    assert.equal((await linkSignIn(address)).id, late.id, 'a link of the address reaches it now');

    const taken = newAddress();
    users.claimer3 = { email: taken, email_verified: false };
    const claimed = await oidcSignIn('claimer3');
    const owner = await linkSignIn(taken);
    users.claimer3.email_verified = true;
    const still = await oidcSignIn('claimer3');
    assert.equal(still.id, claimed.id);
    assert.equal(still.emailVerified, false, 'the owner already has the verified address');
    assert.equal((await linkSignIn(taken)).id, owner.id);
  });
});

describe('migration 0010 on accounts made before it', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(async () => t?.close());

  test('the operator\'s and the emailed links\' addresses are verified; an OpenID sign-up\'s only once the owner used it', async () => {
    const db = t.container.db;
    const made: Record<string, string> = {};
    const audit = (customerId: string, action: string, method: string) => db.insert(auditLog).values({ customerId, actorType: 'session', action, resourceType: 'customer', resourceId: customerId, metadata: { method } });
    const identity = (customerId: string, subject: string) => db.insert(customerIdentities).values({ issuer: 'https://id.example', subject: `${subject}-${customerId}`, customerId, email: null });
    for (const kind of ['link', 'oidc', 'oidcThenLink', 'oidcTwoIdentities']) {
      const [row] = await db.insert(customers).values({ email: newAddress(), name: kind, sandboxLimit: 1 }).returning();
      made[kind] = row.id;
      await audit(row.id, 'customer.sign_up', kind === 'link' ? 'email' : 'oidc');
      if (kind !== 'link') await identity(row.id, 'first');
    }
    await audit(made.oidcThenLink, 'dashboard.sign_in', 'email');
    await identity(made.oidcTwoIdentities, 'second');
    made.operator = t.customer.id;
    made.wallet = (await t.container.services.account.ensureWalletCustomer(db, { walletAddress: `0x${randomBytes(20).toString('hex')}`, sandboxLimit: 1 })).customer.id;

    // The data step of the migration, over the rows as the code before it left them (all unverified).
    const ids = Object.values(made);
    await db.update(customers).set({ emailVerified: false }).where(inArray(customers.id, ids));
    const statements = readFileSync(path.join(import.meta.dirname, '../src/db/migrations/0010_email_verified.sql'), 'utf8').split('--> statement-breakpoint');
    const backfill = statements.find((s) => /UPDATE "customers"/.test(s));
    assert.ok(backfill);
    await db.execute(sql.raw(backfill));

    const rows = await db.select({ id: customers.id, emailVerified: customers.emailVerified }).from(customers).where(inArray(customers.id, ids));
    const verified = Object.fromEntries(Object.entries(made).map(([kind, id]) => [kind, rows.find((r) => r.id === id)?.emailVerified]));
    assert.deepEqual(verified, { link: true, oidc: false, oidcThenLink: true, oidcTwoIdentities: true, operator: true, wallet: false });
  });
});
