/**
 * id_document verifications through the Stripe Identity adapter: the real `stripe` SDK pointed at a
 * local stand-in of Stripe's API (STRIPE_API_URL). Create, the live status route reconciling, cancel,
 * Stripe's webhook signed with the SDK's test helper (delivered twice, applied once; a bad signature
 * refused), and Stripe being down (503, nothing stored or charged, the same key works afterwards).
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import Stripe from 'stripe';
import { auditLog, stripeEvents, verifications } from '../src/db/schema/index.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { account, assertError, ledger } from './fixtures/envelopes.js';
import { startStripeStandin, type StripeStandin } from './fixtures/stripe-standin.js';

const SECRET_KEY = 'sk_test_standin0123456789';
const WEBHOOK_SECRET = 'whsec_standin0123456789abcdef';

let t: TestApp;
let stripe: StripeStandin;
let offsetMs = 0;
// Only for signing test events, as Stripe would; it never calls the network.
const signer = new Stripe(SECRET_KEY);

before(async () => {
  stripe = await startStripeStandin({ secretKey: SECRET_KEY });
  t = await createTestApp({
    creditCents: 10_000,
    env: { STRIPE_SECRET_KEY: SECRET_KEY, STRIPE_WEBHOOK_SECRET: WEBHOOK_SECRET, STRIPE_API_URL: stripe.url },
    overrides: { clock: () => new Date(Date.now() + offsetMs) },
  });
});
after(async () => {
  await t?.close();
  await stripe?.close();
});

const create = (body: Record<string, unknown>, key = randomUUID()) =>
  t.app.inject({ method: 'POST', url: '/v1/verifications', headers: { ...bearer(t.customer.apiKey), 'idempotency-key': key }, payload: { type: 'id_document', email: 'doc@example.com', ...body } });

async function newDocument(body: Record<string, unknown> = {}) {
  const res = await create(body);
  assert.equal(res.statusCode, 201, res.body);
  const v = res.json();
  const stored = (await t.container.db.select().from(verifications).where(eq(verifications.id, v.verificationId)))[0];
  return { v, sessionId: stored.providerRef! };
}

const status = (id: string) => t.app.inject({ url: `/v1/verifications/${id}/status`, headers: bearer(t.customer.apiKey) });
const stored = async (id: string) => (await t.container.db.select().from(verifications).where(eq(verifications.id, id)))[0];

/** Posts an event as Stripe does: the exact JSON text, signed over those bytes. */
function deliver(payload: string, signature = signer.webhooks.generateTestHeaderString({ payload, secret: WEBHOOK_SECRET })) {
  return t.app.inject({ method: 'POST', url: '/webhooks/stripe', headers: { 'content-type': 'application/json; charset=utf-8', 'stripe-signature': signature }, payload });
}

describe('creating an id_document verification', () => {
  test("opens a Stripe VerificationSession; verificationUrl is Stripe's page; USD 0.50 once", async () => {
    const before = await account(t);
    const { v, sessionId } = await newDocument({ name: 'Dora Doc', redirectUrl: 'https://app.example.com/back', metadata: { ref: 'r1' } });
    const session = stripe.sessions.get(sessionId)!;
    assert.equal(session.type, 'document');
    assert.deepEqual(session.metadata, { verificationId: v.verificationId });
    assert.equal(session.return_url, 'https://app.example.com/back');
    assert.deepEqual(session.provided_details, { email: 'doc@example.com' });
    assert.equal(stripe.requests.at(-1)!.authorization, `Bearer ${SECRET_KEY}`);

    assert.deepEqual([v.type, v.provider, v.status, v.attemptsLeft, v.verificationUrl], ['id_document', 'stripe_identity', 'pending', null, session.url]);
    const lifetime = Date.parse(v.expiresAt) - Date.parse(v.createdAt);
    assert.ok(Math.abs(lifetime - 48 * 3_600_000) < 60_000, `expires with Stripe's link, 48 h; got ${lifetime} ms`);
    assert.equal((await account(t)).creditsCents, before.creditsCents - 50);
    assert.deepEqual((await t.app.inject({ url: `/v1/verifications/${v.verificationId}`, headers: bearer(t.customer.apiKey) })).json(), v);
  });

  test('Stripe down is 503 IDENTITY_PROVIDER_UNAVAILABLE: nothing stored, nothing charged; the same key works once it is back', async () => {
    const before = await account(t);
    const count = (await t.container.db.select().from(verifications)).length;
    const key = randomUUID();
    stripe.down = true;
    try {
      const res = await create({ email: 'down@example.com' }, key);
      assertError(res, 503, 'IDENTITY_PROVIDER_UNAVAILABLE');
      assert.doesNotMatch(res.body, new RegExp(SECRET_KEY));
    } finally {
      stripe.down = false;
    }
    assert.equal((await account(t)).creditsCents, before.creditsCents);
    assert.equal((await t.container.db.select().from(verifications)).length, count);
    const retry = await create({ email: 'down@example.com' }, key);
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    assert.equal((await account(t)).creditsCents, before.creditsCents - 50);
  });
});

describe('GET /v1/verifications/{id}/status', () => {
  test("asks Stripe and corrects the stored copy: Stripe's status wins", async () => {
    const { v, sessionId } = await newDocument();
    assert.equal((await status(v.verificationId)).json().status, 'pending');

    stripe.setStatus(sessionId, 'requires_input', 'document_unverified_other');
    const retry = (await status(v.verificationId)).json();
    assert.deepEqual([retry.status, retry.failureReason], ['pending', 'document_unverified_other']);

    stripe.setStatus(sessionId, 'processing');
    assert.equal((await status(v.verificationId)).json().status, 'pending');

    stripe.setStatus(sessionId, 'verified');
    const live = (await status(v.verificationId)).json();
    assert.deepEqual([live.status, live.failureReason, live.verificationUrl], ['verified', null, null]);
    assert.ok(live.verifiedAt);
    const row = await stored(v.verificationId);
    assert.equal(row.status, 'verified');
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, v.verificationId), eq(auditLog.action, 'verification.reconcile')));
    assert.ok(audit.some((a) => (a.metadata as { to?: string }).to === 'verified'));
    // A later status read from a terminal state changes nothing.
    stripe.setStatus(sessionId, 'canceled');
    assert.equal((await status(v.verificationId)).json().status, 'verified');
  });

  test('Stripe down on a status read is 503 and the stored copy stays', async () => {
    const { v } = await newDocument();
    stripe.down = true;
    try {
      assertError(await status(v.verificationId), 503, 'IDENTITY_PROVIDER_UNAVAILABLE');
    } finally {
      stripe.down = false;
    }
    assert.equal((await stored(v.verificationId)).status, 'pending');
  });

  test("past expiresAt a session still waiting for input is expired; Stripe's later verdict of verified still counts", async () => {
    const { v, sessionId } = await newDocument();
    offsetMs = 48 * 3_600_000 + 1_000;
    try {
      assert.equal((await status(v.verificationId)).json().status, 'expired');
      stripe.setStatus(sessionId, 'verified');
      assert.equal((await status(v.verificationId)).json().status, 'verified');
    } finally {
      offsetMs = 0;
    }
  });
});

describe('POST /v1/verifications/{id}/cancel', () => {
  test("cancels Stripe's session too; a session Stripe verified already is 409", async () => {
    const { v, sessionId } = await newDocument();
    const res = await t.app.inject({ method: 'POST', url: `/v1/verifications/${v.verificationId}/cancel`, headers: bearer(t.customer.apiKey) });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual([res.json().status, res.json().verificationUrl], ['canceled', null]);
    assert.equal(stripe.sessions.get(sessionId)!.status, 'canceled');

    const done = await newDocument();
    stripe.setStatus(done.sessionId, 'verified');
    const refused = assertError(await t.app.inject({ method: 'POST', url: `/v1/verifications/${done.v.verificationId}/cancel`, headers: bearer(t.customer.apiKey) }), 409, 'VERIFICATION_NOT_PENDING');
    assert.equal(refused.status, 'verified');
  });
});

describe('POST /webhooks/stripe', () => {
  test('a signed event is applied once, however often Stripe delivers it', async () => {
    const { v, sessionId } = await newDocument();
    stripe.setStatus(sessionId, 'verified');
    const event = stripe.event('identity.verification_session.verified', sessionId);
    const first = await deliver(event.payload);
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(first.json(), { received: true, applied: true });
    const second = await deliver(event.payload);
    assert.deepEqual(second.json(), { received: true, applied: false });

    const row = await stored(v.verificationId);
    assert.equal(row.status, 'verified');
    assert.ok(row.verifiedAt);
    assert.equal((await t.container.db.select().from(stripeEvents).where(eq(stripeEvents.id, event.id))).length, 1);
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, v.verificationId), eq(auditLog.action, 'verification.reconcile')));
    assert.equal(audit.length, 1, 'one change, one audit row');
    assert.equal(audit[0].actorType, 'system');
  });

  test('requires_input keeps it pending with the reason; canceled cancels; events for sessions not ours are acknowledged', async () => {
    const { v, sessionId } = await newDocument();
    stripe.setStatus(sessionId, 'requires_input', 'selfie_face_mismatch');
    assert.equal((await deliver(stripe.event('identity.verification_session.requires_input', sessionId).payload)).statusCode, 200);
    assert.deepEqual([(await stored(v.verificationId)).status, (await stored(v.verificationId)).failureReason], ['pending', 'selfie_face_mismatch']);
    stripe.setStatus(sessionId, 'canceled');
    assert.equal((await deliver(stripe.event('identity.verification_session.canceled', sessionId).payload)).statusCode, 200);
    assert.equal((await stored(v.verificationId)).status, 'canceled');

    // A session made by something else on the same Stripe account.
    const foreign = stripe.addSession({ metadata: { orderId: 'o-1' } });
    const res = await deliver(stripe.event('identity.verification_session.processing', foreign.id).payload);
    assert.deepEqual(res.json(), { received: true, applied: true });
  });

  test('a bad or missing signature is 400 STRIPE_SIGNATURE_INVALID and changes nothing', async () => {
    const { v, sessionId } = await newDocument();
    stripe.setStatus(sessionId, 'verified');
    const event = stripe.event('identity.verification_session.verified', sessionId);
    assertError(await deliver(event.payload, signer.webhooks.generateTestHeaderString({ payload: event.payload, secret: 'whsec_someone_else' })), 400, 'STRIPE_SIGNATURE_INVALID');
    const tampered = event.payload.replace('"verified"', '"canceled"');
    assertError(await deliver(tampered, signer.webhooks.generateTestHeaderString({ payload: event.payload, secret: WEBHOOK_SECRET })), 400, 'STRIPE_SIGNATURE_INVALID');
    const stale = signer.webhooks.generateTestHeaderString({ payload: event.payload, secret: WEBHOOK_SECRET, timestamp: Math.floor(Date.now() / 1000) - 3600 });
    assertError(await deliver(event.payload, stale), 400, 'STRIPE_SIGNATURE_INVALID');
    const unsigned = await t.app.inject({ method: 'POST', url: '/webhooks/stripe', headers: { 'content-type': 'application/json' }, payload: event.payload });
    assertError(unsigned, 400, 'STRIPE_SIGNATURE_INVALID');
    assert.equal((await stored(v.verificationId)).status, 'pending');
    assert.equal((await t.container.db.select().from(stripeEvents).where(eq(stripeEvents.id, event.id))).length, 0);
  });

  test('an event type with no handler is acknowledged and not recorded', async () => {
    const { sessionId } = await newDocument();
    const event = stripe.event('identity.verification_session.redacted', sessionId);
    const res = await deliver(event.payload);
    assert.deepEqual(res.json(), { received: true, applied: false });
    assert.equal((await t.container.db.select().from(stripeEvents).where(eq(stripeEvents.id, event.id))).length, 0);
  });
});
