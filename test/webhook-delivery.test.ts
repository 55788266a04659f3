/**
 * Webhook deliveries end to end: envelope events → delivery rows → the job worker → a real HTTP POST
 * to a local receiver. Signatures are checked by an independent implementation of SPEC.md's three
 * steps; retries, timeouts, the disable threshold, 410, redirects and the send-time address check are
 * observed both at the receiver and through GET /v1/webhooks/{id}/deliveries.
 */
import assert from 'node:assert/strict';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import type { ResolvedAddress, Resolver } from '../src/providers/webhooks/url-policy.js';
import { OPS_TOKEN, bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { createEnvelope, getEnvelope, person, openAs, recipientToken, signAs } from './fixtures/envelopes.js';
import { startReceiver, type ReceivedRequest, type Receiver } from './fixtures/receiver.js';

const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;

// ---------------------------------------------------------------------------------------------
// What a receiver does, written from SPEC.md alone (no code shared with the service).

/** Standard format: HMAC-SHA256(secret, "<t>.<raw body>") hex, compared in constant time, t within 300 s. */
function verifyStandard(raw: Buffer, header: string | undefined, secret: string, nowSeconds = Date.now() / 1000): boolean {
  if (!header) return false;
  const parts = new Map(
    header.split(',').map((kv) => {
      const i = kv.indexOf('=');
      return [kv.slice(0, i).trim(), kv.slice(i + 1).trim()] as const;
    }),
  );
  const t = parts.get('t');
  const v1 = parts.get('v1');
  if (!t || !/^\d+$/.test(t) || !v1 || !/^[0-9a-f]{64}$/.test(v1)) return false;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(raw).digest();
  const given = Buffer.from(v1, 'hex');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
  return Math.abs(nowSeconds - Number(t)) <= 300;
}

/** Alt format: sha256=<hex HMAC-SHA256(secret, raw body)>. */
function verifyAlt(raw: Buffer, header: string | undefined, secret: string): boolean {
  const m = /^sha256=([0-9a-f]{64})$/.exec(header ?? '');
  if (!m) return false;
  const expected = createHmac('sha256', secret).update(raw).digest();
  const given = Buffer.from(m[1], 'hex');
  return timingSafeEqual(given, expected);
}

const tOf = (header: string) => Number(/(?:^|,)t=(\d+)/.exec(header)![1]);
const header = (r: ReceivedRequest, name: string) => r.headers[name] as string | undefined;

// ---------------------------------------------------------------------------------------------

const PUBLIC4 = '93.184.216.34';
const dns = new Map<string, ResolvedAddress[]>();
const resolver: Resolver = async (host) => {
  const answer = dns.get(host.toLowerCase());
  if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return answer;
};

const SCHEDULE_MS = [1000, 1000]; // three attempts: now, +1 s, +1 s
const DISABLE_AFTER = 4;
let t: TestApp;
const receivers: Receiver[] = [];

before(async () => {
  t = await createTestApp({
    env: {
      WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      WEBHOOK_RETRY_SCHEDULE: '1s,1s',
      WEBHOOK_DISABLE_AFTER: String(DISABLE_AFTER),
      // Below the retry test's slow reply (1.5 s), and well above a prompt answer on a loaded machine.
      WEBHOOK_TIMEOUT_MS: '1000',
      // The scheduler tick is far away: a first attempt that arrives promptly came from the NOTIFY
      // wake-up; retries run when `until` wakes the worker.
      SCHEDULER_INTERVAL_MS: '60000',
    },
    overrides: { webhookResolver: resolver },
  });
  await t.container.worker.start();
});
after(async () => {
  await t?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const r = await startReceiver(...args);
  receivers.push(r);
  return r;
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function register(c: TestCustomer, body: Json): Promise<Json & { id: string; secret: string }> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...bearer(c.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

async function webhook(c: TestCustomer, id: string): Promise<Json> {
  const res = await t.app.inject({ url: `/v1/webhooks/${id}`, headers: bearer(c.apiKey) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

async function deliveriesOf(c: TestCustomer, id: string, q = '?limit=100'): Promise<Json[]> {
  const res = await t.app.inject({ url: `/v1/webhooks/${id}/deliveries${q}`, headers: bearer(c.apiKey) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data;
}

/** Keeps waking the worker (so retries that fell due run) until `check` returns something truthy. */
async function until<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    t.container.worker.wake();
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const deliveryWhere = (c: TestCustomer, id: string, pred: (d: Json) => boolean) => async () => (await deliveriesOf(c, id)).find(pred);

async function alertsFor(webhookId: string): Promise<Json[]> {
  const res = await t.app.inject({ url: '/ops/alerts?limit=100', headers: bearer(OPS_TOKEN) });
  assert.equal(res.statusCode, 200, res.body);
  return res.json().data.filter((a: Json) => a.resourceId === webhookId);
}

describe('a delivery', () => {
  test('is a signed POST that an independent implementation of the three documented steps verifies, sent promptly after the event', async () => {
    const c = await t.createCustomer(500);
    const r = await receiver();
    const w = await register(c, { url: r.url(), events: ['*'] });
    const env = await createEnvelope(t, { title: 'Signed delivery', recipients: [person('sig')] }, { apiKey: c.apiKey });
    // No wake-ups from the test here: only the worker's own NOTIFY listener can make this prompt.
    const [req] = await r.waitFor(1, 5_000);

    assert.equal(req.method, 'POST');
    assert.equal(req.path, '/hook');
    assert.match(header(req, 'content-type') ?? '', /^application\/json/);
    assert.equal(header(req, 'x-service-event'), 'envelope.sent');
    assert.match(header(req, 'x-service-delivery-id') ?? '', new RegExp(`^dlv_${UUID}$`));
    const signature = header(req, 'x-service-signature')!;
    assert.match(signature, /^t=\d+,v1=[0-9a-f]{64}$/);

    // Step 1 and 2: the HMAC over "<t>.<raw body>" matches in constant time; step 3: t is fresh.
    assert.equal(verifyStandard(req.raw, signature, w.secret), true);
    assert.ok(Math.abs(Date.now() / 1000 - tOf(signature)) < 10);
    // ...and the same checks refuse what they should, so the positive result above means something.
    const tampered = Buffer.from(req.raw);
    tampered[tampered.length - 2] ^= 1;
    assert.equal(verifyStandard(tampered, signature, w.secret), false, 'a changed body');
    assert.equal(verifyStandard(req.raw, signature, `${w.secret}x`), false, 'another secret');
    assert.equal(verifyStandard(req.raw, signature.replace(/t=(\d+)/, (_, n) => `t=${Number(n) + 1}`), w.secret), false, 'another timestamp');
    assert.equal(verifyStandard(req.raw, signature, w.secret, tOf(signature) + 301), false, 'older than 300 s');
    assert.equal(verifyStandard(req.raw, signature, w.secret, tOf(signature) + 299), true, 'within 300 s');

    // Body: {event, deliveredAt, envelope} with the envelope as GET /v1/envelopes/{id} shows it.
    const body = JSON.parse(req.raw.toString('utf8'));
    assert.deepEqual(Object.keys(body).sort(), ['deliveredAt', 'envelope', 'event']);
    assert.equal(body.event, 'envelope.sent');
    assert.match(body.deliveredAt, ISO);
    assert.ok(Math.abs(Date.parse(body.deliveredAt) / 1000 - tOf(signature)) < 2);
    const got = await getEnvelope(t, env.envelopeId, c.apiKey);
    const { events: _events, ...asListed } = got;
    assert.deepEqual(Object.keys(body.envelope).sort(), Object.keys(asListed).sort());
    for (const k of ['envelopeId', 'engineEnvelopeId', 'title', 'createdAt', 'status']) assert.deepEqual(body.envelope[k], got[k], k);
    assert.deepEqual(
      body.envelope.recipients.map((x: Json) => [x.email, x.name, x.role]),
      got.recipients.map((x) => [x.email, x.name, x.role]),
    );

    // The delivery as the customer sees it.
    const d = await until('the delivery recorded', deliveryWhere(c, w.id, (x) => x.status === 'SUCCESS'));
    assert.equal(`dlv_${d.id}`, header(req, 'x-service-delivery-id'));
    assert.equal(d.deliveryId, header(req, 'x-service-delivery-id'));
    assert.equal(d.webhookId, w.id);
    assert.equal(d.event, 'envelope.sent');
    assert.equal(d.envelopeId, env.envelopeId);
    assert.equal(d.attempts, 1);
    assert.equal(d.responseCode, 200);
    assert.equal(d.errorMessage, null);
    assert.match(d.lastAttemptAt, ISO);
    assert.equal(d.nextRetryAt, null);
    assert.match(d.createdAt, ISO);

    // Lag from the event's commit to the first attempt (loose here; the bench measures it).
    const [ev] = rowsOf<{ occurred_at: Date | string }>(
      await t.container.db.execute(sql`SELECT occurred_at FROM envelope_events WHERE envelope_id = ${env.envelopeId} AND event_type = 'DOCUMENT_SENT'`),
    );
    const lag = req.receivedAt - new Date(ev.occurred_at).getTime();
    assert.ok(lag >= 0 && lag < 2_000, `first attempt ${lag} ms after the event`);
    assert.equal(r.requests.length, 1);
  });

  test('Alt format: {event, envelopeId, timestamp, data} signed sha256=<hex HMAC of the raw body>', async () => {
    const c = await t.createCustomer(500);
    const r = await receiver();
    const secret = 'alt-format-secret-0123456789abcdef';
    const w = await register(c, { url: r.url(), events: ['*'], format: 'alt', secret });
    const signerOne = person('alt');
    const env = await createEnvelope(t, { title: 'Alt format', recipients: [signerOne] }, { apiKey: c.apiKey });
    const token = recipientToken(env, signerOne.email);
    await r.waitFor(1, 5_000);
    await openAs(t, token);
    await signAs(t, token);
    // Delivery is at least once: on a loaded machine an attempt can outlast the timeout and be
    // sent again, so wait for the four events rather than for four requests.
    await until('four alt events', () => new Set(r.requests.map((q) => header(q, 'x-service-event'))).size >= 4 && r.requests);

    const byEvent = new Map(r.requests.map((q) => [header(q, 'x-service-event'), q]));
    assert.deepEqual([...byEvent.keys()].sort(), ['envelope.completed', 'envelope.sent', 'envelope.signed', 'envelope.viewed']);
    for (const q of r.requests) {
      const sig = header(q, 'x-service-signature');
      assert.match(sig ?? '', /^sha256=[0-9a-f]{64}$/);
      assert.equal(verifyAlt(q.raw, sig, secret), true);
      const tampered = Buffer.concat([q.raw, Buffer.from(' ')]);
      assert.equal(verifyAlt(tampered, sig, secret), false);
      assert.equal(verifyAlt(q.raw, sig, 'another-secret-0123456789abcdef'), false);
      assert.match(header(q, 'x-service-delivery-id') ?? '', new RegExp(`^dlv_${UUID}$`));
      const body = JSON.parse(q.raw.toString('utf8'));
      assert.deepEqual(Object.keys(body).sort(), ['data', 'envelopeId', 'event', 'timestamp']);
      assert.equal(body.event, header(q, 'x-service-event'));
      assert.equal(body.envelopeId, env.envelopeId);
      assert.match(body.timestamp, ISO);
      assert.deepEqual(Object.keys(body.data).sort(), ['envelope', 'recipient']);
      assert.deepEqual(Object.keys(body.data.envelope).sort(), ['createdAt', 'status', 'title']);
      assert.equal(body.data.envelope.title, 'Alt format');
      assert.equal(body.data.envelope.createdAt, env.createdAt);
    }
    const signed = JSON.parse(byEvent.get('envelope.signed')!.raw.toString('utf8'));
    assert.deepEqual(Object.keys(signed.data.recipient).sort(), ['email', 'name', 'role', 'signedAt']);
    assert.equal(signed.data.recipient.email, signerOne.email);
    assert.equal(signed.data.recipient.name, signerOne.name);
    assert.equal(signed.data.recipient.role, 'SIGNER');
    assert.match(signed.data.recipient.signedAt, ISO);
    const completed = JSON.parse(byEvent.get('envelope.completed')!.raw.toString('utf8'));
    assert.equal(completed.data.envelope.status, 'COMPLETED');
    const viewed = JSON.parse(byEvent.get('envelope.viewed')!.raw.toString('utf8'));
    assert.equal(viewed.data.recipient.email, signerOne.email);
    assert.equal(viewed.data.recipient.signedAt, null);
    // The receiver sees a request before the worker records its answer: wait for the four records.
    const recorded = await until('four recorded deliveries', async () => {
      const ds = await deliveriesOf(c, w.id);
      return ds.length === 4 && ds.every((d) => d.status === 'SUCCESS') && ds;
    });
    assert.deepEqual(recorded.map((d) => d.attempts), [1, 1, 1, 1]);
  });
});

describe('retries', () => {
  test('a timeout, then a 500, then a 200: three attempts of one delivery id, recorded step by step, ending SUCCESS', async () => {
    const c = await t.createCustomer(500);
    const r = await receiver({ replies: [{ status: 200, delayMs: 1_500 }, { status: 500, body: `overloaded ${'x'.repeat(100_000)}` }, 200] });
    const w = await register(c, { url: r.url(), events: ['envelope.sent'] });
    await createEnvelope(t, { title: 'Retries', recipients: [person('retry')] }, { apiKey: c.apiKey });

    // After the first attempt: PENDING, no response code (it timed out), the next attempt ~1 s later.
    const first = await until('attempt 1', deliveryWhere(c, w.id, (d) => d.attempts === 1));
    assert.equal(first.status, 'PENDING');
    assert.equal(first.responseCode, null);
    assert.match(first.errorMessage, /timeout|timed out/i);
    const wait = Date.parse(first.nextRetryAt) - Date.parse(first.lastAttemptAt);
    assert.ok(wait >= SCHEDULE_MS[0] * 0.9 - 5 && wait <= SCHEDULE_MS[0] * 1.1 + 5, `next retry ${wait} ms after the first attempt`);
    assert.equal((await webhook(c, w.id)).consecutiveFailures, 1);

    const second = await until('attempt 2', deliveryWhere(c, w.id, (d) => d.attempts === 2));
    assert.equal(second.status, 'PENDING');
    assert.equal(second.responseCode, 500);
    assert.ok(second.errorMessage.length > 0 && second.errorMessage.length <= 500, `a short errorMessage (${second.errorMessage.length} chars)`);
    assert.ok(Date.parse(second.lastAttemptAt) >= Date.parse(first.nextRetryAt) - 50, 'not retried before its time');
    assert.equal((await webhook(c, w.id)).consecutiveFailures, 2);

    const done = await until('SUCCESS', deliveryWhere(c, w.id, (d) => d.status === 'SUCCESS'));
    assert.equal(done.attempts, 3);
    assert.equal(done.responseCode, 200);
    assert.equal(done.errorMessage, null);
    assert.equal(done.nextRetryAt, null);
    assert.ok(Date.parse(done.lastAttemptAt) > Date.parse(second.lastAttemptAt));
    assert.equal((await webhook(c, w.id)).consecutiveFailures, 0, 'a success resets the count');

    // The receiver saw one delivery id three times, each attempt freshly and validly signed.
    assert.equal(r.requests.length, 3);
    assert.deepEqual(new Set(r.requests.map((q) => header(q, 'x-service-delivery-id'))), new Set([done.deliveryId]));
    for (const q of r.requests) assert.equal(verifyStandard(q.raw, header(q, 'x-service-signature'), w.secret), true);
    for (let i = 1; i < 3; i++) {
      const gap = r.requests[i].receivedAt - r.requests[i - 1].receivedAt;
      assert.ok(gap >= SCHEDULE_MS[i - 1] * 0.9 - 20, `attempt ${i + 1} came ${gap} ms after attempt ${i}`);
    }
    assert.deepEqual(await deliveriesOf(c, w.id, '?status=PENDING'), []);
    assert.equal((await deliveriesOf(c, w.id, '?status=SUCCESS')).length, 1);
  });

  test('exhausting the schedule ends FAILED; failures add up to WEBHOOK_DISABLE_AFTER, which disables the registration and alerts operators; PUT re-activates', async () => {
    const c = await t.createCustomer(500);
    const r = await receiver({ fallback: 500 });
    const w = await register(c, { url: r.url(), events: ['*'] });
    const signerOne = person('exhaust');
    const env = await createEnvelope(t, { title: 'Exhaust', recipients: [signerOne] }, { apiKey: c.apiKey });

    const failed = await until('FAILED after the schedule', deliveryWhere(c, w.id, (d) => d.status === 'FAILED'));
    assert.equal(failed.attempts, SCHEDULE_MS.length + 1);
    assert.equal(failed.responseCode, 500);
    assert.equal(failed.nextRetryAt, null);
    assert.ok(failed.errorMessage);
    assert.equal(r.requests.length, 3);
    assert.equal(new Set(r.requests.map((q) => header(q, 'x-service-delivery-id'))).size, 1);
    let hook = await webhook(c, w.id);
    assert.equal(hook.active, true, `still below the threshold of ${DISABLE_AFTER}`);
    assert.equal(hook.consecutiveFailures, 3);
    assert.deepEqual(await alertsFor(w.id), []);

    // One more failed attempt (of the next event's delivery) reaches the threshold.
    await openAs(t, recipientToken(env, signerOne.email));
    const viewed = await until('the viewed delivery to fail', deliveryWhere(c, w.id, (d) => d.event === 'envelope.viewed' && d.status === 'FAILED'));
    assert.equal(viewed.attempts, 1, 'the registration was disabled at this attempt; no more retries');
    hook = await webhook(c, w.id);
    assert.equal(hook.active, false);
    assert.equal(hook.consecutiveFailures, DISABLE_AFTER);
    assert.equal(typeof hook.disabledReason, 'string');
    const alerts = await alertsFor(w.id);
    assert.equal(alerts.length, 1, JSON.stringify(alerts));
    assert.equal(alerts[0].kind, 'webhook_disabled');
    assert.equal(alerts[0].customerId, c.id);

    // Disabled: later events make no deliveries; the customer's own calls never saw an error.
    await signAs(t, recipientToken(env, signerOne.email));
    await until('the envelope to complete', async () => (await getEnvelope(t, env.envelopeId, c.apiKey)).status === 'COMPLETED');
    await sleep(200);
    assert.equal((await deliveriesOf(c, w.id)).length, 2);
    assert.equal(r.requests.length, DISABLE_AFTER);

    // Re-activated, it starts from zero and receives the next event.
    const res = await t.app.inject({ method: 'PUT', url: `/v1/webhooks/${w.id}`, headers: { ...bearer(c.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ active: true }) });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().consecutiveFailures, 0);
    assert.equal(res.json().active, true);
    r.queue(200);
    await createEnvelope(t, { title: 'After re-activation', recipients: [person('again')] }, { apiKey: c.apiKey });
    const ok = await until('a delivery after re-activation', deliveryWhere(c, w.id, (d) => d.status === 'SUCCESS'));
    assert.equal(ok.attempts, 1);
    assert.equal((await webhook(c, w.id)).consecutiveFailures, 0);
  });

  test('410 Gone disables the registration at once and raises an alert', async () => {
    const c = await t.createCustomer(500);
    const r = await receiver({ fallback: 410 });
    const w = await register(c, { url: r.url(), events: ['*'] });
    await createEnvelope(t, { title: 'Gone', recipients: [person('gone')] }, { apiKey: c.apiKey });
    const d = await until('the delivery to fail', deliveryWhere(c, w.id, (x) => x.status === 'FAILED'));
    assert.equal(d.attempts, 1);
    assert.equal(d.responseCode, 410);
    const hook = await webhook(c, w.id);
    assert.equal(hook.active, false);
    assert.equal(hook.consecutiveFailures, 1);
    assert.match(hook.disabledReason, /410/);
    const alerts = await alertsFor(w.id);
    assert.equal(alerts.length, 1);
    assert.equal(alerts[0].kind, 'webhook_disabled');
    // Nothing is retried.
    const end = Date.now() + SCHEDULE_MS[0] + 500;
    await until('a retry window to pass', () => Date.now() > end);
    assert.equal(r.requests.length, 1);
  });

  test('redirects are not followed: a 302 to 169.254.169.254 and a 307 to another receiver are failed attempts', async () => {
    const c = await t.createCustomer(500);
    const elsewhere = await receiver();
    const r = await receiver({
      replies: [
        { status: 302, headers: { location: 'http://169.254.169.254/latest/meta-data/' } },
        { status: 307, headers: { location: elsewhere.url('/stolen') } },
        200,
      ],
    });
    const w = await register(c, { url: r.url(), events: ['envelope.sent'] });
    await createEnvelope(t, { title: 'Redirects', recipients: [person('redir')] }, { apiKey: c.apiKey });
    const first = await until('attempt 1', deliveryWhere(c, w.id, (d) => d.attempts === 1));
    assert.equal(first.status, 'PENDING');
    assert.equal(first.responseCode, 302);
    assert.match(first.errorMessage, /redirect/i);
    const second = await until('attempt 2', deliveryWhere(c, w.id, (d) => d.attempts === 2));
    assert.equal(second.responseCode, 307);
    const done = await until('SUCCESS', deliveryWhere(c, w.id, (d) => d.status === 'SUCCESS'));
    assert.equal(done.attempts, 3);
    assert.equal(elsewhere.requests.length, 0, 'the redirect target was never called');
    assert.equal(r.requests.length, 3);
  });

  test('the address is checked again when sending: a name that now resolves to a private address is not dialled', async () => {
    const c = await t.createCustomer(500);
    const r = await receiver();
    dns.set('rebind.example.com', [{ address: PUBLIC4, family: 4 }]);
    const w = await register(c, { url: `http://rebind.example.com:${r.port}/hook`, events: ['envelope.sent'] });
    // DNS changes after registration: the name now points at a local service (our receiver).
    dns.set('rebind.example.com', [{ address: '127.0.0.1', family: 4 }]);
    await createEnvelope(t, { title: 'Rebinding', recipients: [person('rebind')] }, { apiKey: c.apiKey });
    const first = await until('attempt 1', deliveryWhere(c, w.id, (d) => d.attempts === 1));
    assert.equal(first.status, 'PENDING');
    assert.equal(first.responseCode, null);
    assert.match(first.errorMessage, /refused|public/i);
    assert.equal(r.requests.length, 0, 'no connection was made');
    // Stop the retries.
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${w.id}`, headers: bearer(c.apiKey) });
    assert.equal(res.statusCode, 204);
  });
});
