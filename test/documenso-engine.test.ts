/**
 * SIGNING_ENGINE=documenso end to end: the real app (routes, services, jobs) over the documenso engine,
 * against the Documenso stand-in (test/fixtures/documenso-standin.ts), whose recipients sign there and
 * whose webhooks reach POST /engine/documenso/webhook over HTTP.
 */
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { ConfigError, loadConfig } from '../src/config.js';
import { createDocumensoClient } from '../src/engine/documenso/client.js';
import { createDocumensoEngine } from '../src/engine/documenso/documenso-engine.js';
import { createEnvelopesRepo } from '../src/modules/envelopes/envelopes.repo.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { type DocumensoStandin, startDocumensoStandin } from './fixtures/documenso-standin.js';
import { assertError, drain, envelopeBody, eventTypes, ledgerFor, makePdf, multipart, newKey, person, postMultipart, samplePdf, sigField, uniq, type Envelope, type Recipient } from './fixtures/envelopes.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';

const SECRET = 'documenso-webhook-secret-for-tests';
let standin: DocumensoStandin;
let receiver: Receiver;
let t: TestApp;
let hookUrl: string;
let outboundWebhookId: string;

before(async () => {
  standin = await startDocumensoStandin();
  receiver = await startReceiver();
  t = await createTestApp({
    // The hang tests wait out one call's timeout each: 4 s, still twice the 2 s other requests must beat.
    env: { SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: standin.url, DOCUMENSO_API_KEY: standin.apiKey, DOCUMENSO_WEBHOOK_SECRET: SECRET, DOCUMENSO_TIMEOUT_MS: '4000', WEBHOOK_ALLOW_HOSTS: '127.0.0.1' },
  });
  // Documenso posts its webhooks over HTTP: the app listens, as in production.
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  hookUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}/engine/documenso/webhook`;
  standin.webhook = { url: hookUrl, secret: SECRET };
  const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ url: receiver.url('/signet'), events: ['*'] }) });
  assert.equal(res.statusCode, 201, res.body);
  outboundWebhookId = res.json().id;
});
after(async () => {
  await t?.close();
  await standin?.close();
  await receiver?.close();
});

const balance = async (apiKey = t.customer.apiKey): Promise<number> => (await t.app.inject({ url: '/v1/account', headers: bearer(apiKey) })).json().balanceMicros;
const envelopeCount = async (apiKey = t.customer.apiKey): Promise<number> => (await t.app.inject({ url: '/v1/envelopes', headers: bearer(apiKey) })).json().total;
const status = async (id: string, apiKey = t.customer.apiKey) => t.app.inject({ url: `/v1/envelopes/${id}/status`, headers: bearer(apiKey) });
const deliveredEvents = async (envelopeId: string): Promise<string[]> => {
  const res = await t.app.inject({ url: `/v1/webhooks/${outboundWebhookId}/deliveries?limit=100`, headers: bearer(t.customer.apiKey) });
  assert.equal(res.statusCode, 200, res.body);
  return (res.json().data as { event: string; envelopeId: string | null }[]).filter((d) => d.envelopeId === envelopeId).map((d) => d.event);
};

async function create(recipients: Recipient[], opts: { key?: string; draft?: boolean } = {}) {
  const payload = { title: 'Contract', recipients, fields: recipients.filter((r) => r.role === 'SIGNER').map((r) => sigField(r.email)), ...(opts.draft ? { draft: true } : {}) };
  return postMultipart(t, envelopeBody([await samplePdf()], payload), { key: opts.key ?? newKey() });
}

/** Creates and sends; the distribution job runs: Documenso's envelope is PENDING, Signet's SENT. */
async function createSent(recipients: Recipient[]): Promise<Envelope> {
  const res = await create(recipients);
  assert.equal(res.statusCode, 201, res.body);
  const env = res.json() as Envelope;
  await drain(t);
  return env;
}

/** Envelope jobs (distribution, expiry, cancellation) waiting for a retry run now (drain runs only what is due). */
async function retryJobsNow(): Promise<void> {
  await t.container.db.execute(sql`UPDATE jobs SET run_at = now() WHERE status = 'queued' AND type IN ('envelope.distribute', 'envelope.expire', 'envelope.cancel')`);
  await drain(t);
}

/** A promise's value and how long it took. */
const timed = async <T>(p: Promise<T>) => {
  const started = Date.now();
  const value = await p;
  return { value, ms: Date.now() - started };
};

const postHook = (body: unknown, secret: string | null = SECRET) =>
  t.app.inject({ method: 'POST', url: '/engine/documenso/webhook', headers: { 'content-type': 'application/json', ...(secret === null ? {} : { 'x-documenso-secret': secret }) }, payload: JSON.stringify(body) });

describe('documenso engine', () => {
  test('create-and-send: Documenso holds the envelope; recipients get Documenso signing URLs; one charge', async () => {
    const before = await balance();
    const [a, b] = [person('ds-a'), person('ds-b')];
    const res = await create([a, b]);
    assert.equal(res.statusCode, 201, res.body);
    const env = res.json() as Envelope;
    assert.equal(env.status, 'PENDING');
    assert.match(env.engineEnvelopeId, /^envelope_/);
    assert.match(env.engineNumericId ?? '', /^\d+$/);
    const remote = standin.envelopes.get(env.engineEnvelopeId)!.envelope;
    assert.equal(remote.status, 'DRAFT');
    for (const r of env.recipients) {
      const token = remote.recipients.find((x) => x.email === r.email)!.token;
      assert.equal(r.signingUrl, `${standin.origin}/sign/${token}`);
    }
    // Fields in percent of the page, as placed.
    assert.deepEqual(
      remote.fields.map((f) => [f.type, f.page, Number(f.positionX), Number(f.positionY), Number(f.width), Number(f.height)]),
      [
        ['SIGNATURE', 1, 10, 70, 25, 6],
        ['SIGNATURE', 1, 10, 70, 25, 6],
      ],
    );
    assert.deepEqual(env.fields.map((f) => f.fieldId).sort(), remote.fields.map((f) => f.id).sort());
    assert.equal(await balance(), before - 100_000);

    await drain(t);
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'PENDING');
    const live = await status(env.envelopeId);
    assert.equal(live.json().status, 'SENT', live.body);
    // The stored copy's links (GET) are Documenso's too.
    const got = (await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) })).json() as Envelope;
    assert.deepEqual(got.recipients.map((r) => r.signingUrl), env.recipients.map((r) => r.signingUrl));
    // A second distribution (the job run again) is a no-op, not Documenso's 500.
    const calls = standin.calls['envelope.distribute'];
    await t.container.envelopes.distribute(t.container.db, env.envelopeId);
    assert.equal(standin.calls['envelope.distribute'], calls);
  });

  test('a test-mode create-and-send sends no email from Documenso (distribution NONE); a live one does', async () => {
    const a = person('testmode');
    const payload = { recipients: [a], fields: [sigField(a.email)] };
    const test = await postMultipart(t, envelopeBody([await samplePdf()], payload), { apiKey: t.customer.testApiKey });
    assert.equal(test.statusCode, 201, test.body);
    await drain(t);
    const remote = standin.envelopes.get((test.json() as Envelope).engineEnvelopeId)!.envelope;
    assert.equal(remote.status, 'PENDING');
    assert.equal(remote.documentMeta.distributionMethod, 'NONE');
    const live = await createSent([person('livemode')]);
    assert.equal(standin.envelopes.get(live.engineEnvelopeId)!.envelope.documentMeta.distributionMethod, 'EMAIL');
  });

  test('signing in Documenso drives PARTIALLY_SIGNED then COMPLETED through its webhook; a duplicate is applied once; the signed PDF downloads', async () => {
    const [a, b] = [person('sig-a'), person('sig-b')];
    const env = await createSent([a, b]);
    const first = await standin.sign(env.engineEnvelopeId, a.email);
    assert.deepEqual(first.map((d) => d.status), [200, 200]);
    assert.equal((await status(env.envelopeId)).json().status, 'PARTIALLY_SIGNED');

    const pending = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assertError(pending, 400, 'ENVELOPE_NOT_COMPLETE');

    const second = await standin.sign(env.engineEnvelopeId, b.email);
    assert.deepEqual(second.map((d) => d.event), ['DOCUMENT_RECIPIENT_COMPLETED', 'DOCUMENT_SIGNED', 'DOCUMENT_COMPLETED']);
    assert.deepEqual(second.map((d) => d.status), [200, 200, 200]);
    const events = await eventTypes(t, env.envelopeId);
    assert.equal(events.filter((e) => e === 'DOCUMENT_SIGNED').length, 2, events.join());
    assert.equal(events.filter((e) => e === 'DOCUMENT_COMPLETED').length, 1, events.join());

    // Documenso delivers the completion again: nothing more is recorded.
    const again = await standin.redeliver(standin.deliveries.findIndex((d) => d.event === 'DOCUMENT_COMPLETED' && d.body.includes(env.engineEnvelopeId)));
    assert.equal(again.status, 200);
    assert.deepEqual(await eventTypes(t, env.envelopeId), events);

    const got = (await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) })).json() as Envelope;
    assert.equal(got.status, 'COMPLETED');
    assert.deepEqual(got.recipients.map((r) => r.signingStatus), ['SIGNED', 'SIGNED']);
    // The receiver's webhook deliveries: one per recorded event.
    const delivered = await deliveredEvents(env.envelopeId);
    assert.equal(delivered.filter((e) => e === 'envelope.completed').length, 1, delivered.join());
    assert.equal(delivered.filter((e) => e === 'envelope.signed').length, 2, delivered.join());

    const pdf = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(pdf.statusCode, 200, pdf.body);
    assert.equal(pdf.headers['content-type'], 'application/pdf');
    assert.match(pdf.rawPayload.toString('latin1'), new RegExp(`stand-in sealed ${env.engineEnvelopeId}`));
    const original = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download?version=original`, headers: bearer(t.customer.apiKey) });
    assert.equal(original.statusCode, 200);
    assert.deepEqual(new Uint8Array(original.rawPayload), await samplePdf());
  });

  test('the webhook: a wrong or missing secret is 401, a malformed body 400, an unknown envelope 200 ignored', async () => {
    const body = { event: 'DOCUMENT_SIGNED', payload: { id: 987_654_320, envelopeId: 'envelope_notours00000000' }, createdAt: new Date().toISOString(), webhookEndpoint: hookUrl };
    assertError(await postHook(body, 'wrong-secret'), 401, 'UNAUTHORIZED');
    assertError(await postHook(body, null), 401, 'UNAUTHORIZED');
    assertError(await postHook({ event: 'DOCUMENT_SIGNED', payload: {} }), 400, 'VALIDATION_ERROR');
    const res = await postHook(body);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { received: true, ignored: true });
    // Inbound callbacks are internal: not in the OpenAPI.
    const spec = (await t.app.inject({ url: '/openapi.json' })).json();
    assert.equal(Object.keys(spec.paths).some((p) => p.includes('documenso')), false);
  });

  test('a rejection in Documenso ends the envelope REJECTED, with the reason; an approver and a CC map to their roles', async () => {
    const [a, ap, cc] = [person('rej-a'), person('rej-ap', 'APPROVER'), person('rej-cc', 'CC')];
    const env = await createSent([a, ap, cc]);
    assert.deepEqual(standin.envelopes.get(env.engineEnvelopeId)!.envelope.recipients.map((r) => r.role), ['SIGNER', 'APPROVER', 'CC']);
    await standin.reject(env.engineEnvelopeId, a.email, 'Wrong amount');
    const got = (await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) })).json() as Envelope;
    assert.equal(got.status, 'REJECTED');
    const rejected = got.recipients.find((r) => r.email === a.email)!;
    assert.equal(rejected.signingStatus, 'REJECTED');
    assert.equal(rejected.rejectionReason, 'Wrong amount');
    assert.ok(rejected.rejectedAt);
    assert.ok((await eventTypes(t, env.envelopeId)).includes('DOCUMENT_REJECTED'));
  });

  test("a callback in Documenso's own shape (the numeric id only) is applied; one naming another instance's document is ignored", async () => {
    const [a, b] = [person('num-a'), person('num-b')];
    const env = await createSent([a, b]);
    standin.webhook = null;
    try {
      await standin.sign(env.engineEnvelopeId, a.email);
    } finally {
      standin.webhook = { url: hookUrl, secret: SECRET };
    }
    const { envelopeId: _dropped, ...payload } = JSON.parse(standin.deliveries.at(-1)!.body).payload;
    assert.equal(payload.id, Number(env.engineNumericId));
    const res = await postHook({ event: 'DOCUMENT_SIGNED', payload, createdAt: new Date().toISOString(), webhookEndpoint: hookUrl });
    assert.deepEqual(res.json(), { received: true });
    assert.ok((await eventTypes(t, env.envelopeId)).includes('DOCUMENT_SIGNED'));
    const stranger = await postHook({ event: 'DOCUMENT_SIGNED', payload: { ...payload, id: 987_654_321 }, createdAt: new Date().toISOString(), webhookEndpoint: hookUrl });
    assert.deepEqual(stranger.json(), { received: true, ignored: true });
  });

  test('Documenso expiring every recipient still to act (RECIPIENT_EXPIRED) ends the envelope EXPIRED: refunded once, one envelope.expired', async () => {
    const [a, b, cc] = [person('rexp-a'), person('rexp-b'), person('rexp-cc', 'CC')];
    const env = await createSent([a, b, cc]);
    const refunds = async () => (await ledgerFor(t, env.envelopeId, 'refund')).length;
    // One of two expired: the other can still sign.
    await standin.expire(env.engineEnvelopeId, a.email);
    assert.equal((await status(env.envelopeId)).json().status, 'SENT');
    assert.equal(await refunds(), 0);

    const [a2, b2] = [person('rexp-a2'), person('rexp-b2')];
    const ended = await createSent([a2, b2]);
    await standin.expire(ended.engineEnvelopeId, a2.email);
    const deliveries = await standin.expire(ended.engineEnvelopeId, b2.email);
    assert.deepEqual(deliveries.map((d) => [d.event, d.status]), [['RECIPIENT_EXPIRED', 200]]);
    assert.equal(standin.envelopes.get(ended.engineEnvelopeId)!.envelope.status, 'PENDING');
    assert.equal((await status(ended.envelopeId)).json().status, 'EXPIRED');
    // The callback again, and another read: nothing more.
    await standin.redeliver(standin.deliveries.length - 1);
    assert.equal((await status(ended.envelopeId)).json().status, 'EXPIRED');
    await drain(t);
    assert.equal((await ledgerFor(t, ended.envelopeId, 'refund')).length, 1);
    assert.equal((await eventTypes(t, ended.envelopeId)).filter((e) => e === 'DOCUMENT_EXPIRED').length, 1);
    assert.deepEqual((await deliveredEvents(ended.envelopeId)).filter((e) => e === 'envelope.expired'), ['envelope.expired']);
  });

  test("a callback while Documenso's read hangs holds no lock: another customer and the envelope's readers are answered meanwhile", async () => {
    const other = await t.createCustomer(500);
    const a = person('hook-hang');
    const env = await createSent([a]);
    standin.webhook = null;
    try {
      await standin.sign(env.engineEnvelopeId, a.email);
    } finally {
      standin.webhook = { url: hookUrl, secret: SECRET };
    }
    standin.failNext(1, 'hang', { route: 'envelope.get' });
    const gets = standin.calls['envelope.get'];
    const hook = postHook({ event: 'DOCUMENT_COMPLETED', payload: { id: Number(env.engineNumericId), envelopeId: env.engineEnvelopeId }, createdAt: new Date().toISOString(), webhookEndpoint: hookUrl });
    while (standin.calls['envelope.get'] === gets) await new Promise((r) => setTimeout(r, 10));
    const started = Date.now();
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(other.apiKey) })).statusCode, 200);
    assert.equal((await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) })).statusCode, 200);
    assert.ok(Date.now() - started < 2000, `reads waited ${Date.now() - started} ms`);
    // The read is retried (the client's timeout, then a second attempt), and applied.
    assert.deepEqual((await hook).json(), { received: true });
    assert.equal((await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) })).json().status, 'COMPLETED');
    assert.equal((await eventTypes(t, env.envelopeId)).filter((e) => e === 'DOCUMENT_COMPLETED').length, 1);
  });

  test('a lost callback is made good by GET status', async () => {
    const [a, b] = [person('lost-a'), person('lost-b')];
    const env = await createSent([a, b]);
    standin.webhook = null;
    try {
      await standin.open(env.engineEnvelopeId, a.email);
      await standin.sign(env.engineEnvelopeId, a.email);
    } finally {
      standin.webhook = { url: hookUrl, secret: SECRET };
    }
    const live = await status(env.envelopeId);
    assert.equal(live.statusCode, 200, live.body);
    assert.equal(live.json().status, 'PARTIALLY_SIGNED');
    const events = await eventTypes(t, env.envelopeId);
    assert.ok(events.includes('DOCUMENT_SIGNED') && events.includes('DOCUMENT_VIEWED'), events.join());
  });

  test('Documenso down at create: 503 DOCUMENSO_UNAVAILABLE, nothing charged, no envelope; the same key succeeds after', async () => {
    const poorer = await t.createCustomer(500);
    const [balance0, count0] = [await balance(poorer.apiKey), await envelopeCount(poorer.apiKey)];
    const key = newKey();
    const a = person('down');
    const mp = envelopeBody([await samplePdf()], { recipients: [a], fields: [sigField(a.email)] });
    standin.failNext(1, 'error', { route: 'envelope.create' });
    assertError(await postMultipart(t, mp, { apiKey: poorer.apiKey, key }), 503, 'DOCUMENSO_UNAVAILABLE');
    assert.equal(await balance(poorer.apiKey), balance0);
    assert.equal(await envelopeCount(poorer.apiKey), count0);

    // Created, but its read-back fails: the draft is deleted again in Documenso.
    const before = standin.envelopes.size;
    standin.failNext(3, 'error', { route: 'envelope.get' });
    assertError(await postMultipart(t, mp, { apiKey: poorer.apiKey, key }), 503, 'DOCUMENSO_UNAVAILABLE');
    assert.equal(standin.envelopes.size, before);
    assert.equal(await balance(poorer.apiKey), balance0);

    const ok = await postMultipart(t, mp, { apiKey: poorer.apiKey, key });
    assert.equal(ok.statusCode, 201, ok.body);
    assert.equal(await balance(poorer.apiKey), balance0 - 100_000);
    const replay = await postMultipart(t, mp, { apiKey: poorer.apiKey, key });
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(replay.json().envelopeId, ok.json().envelopeId);
    assert.equal(await balance(poorer.apiKey), balance0 - 100_000);
  });

  test('Documenso refusing the create (4xx): 502 SEND_FAILED, retryable false, nothing charged, no envelope', async () => {
    const [balance0, count0] = [await balance(), await envelopeCount()];
    const a = person('refused');
    standin.failNext(1, 'error', { route: 'envelope.create', status: 400 });
    const body = assertError(await create([a]), 502, 'SEND_FAILED');
    assert.equal(body.retryable, false);
    assert.equal(await balance(), balance0);
    assert.equal(await envelopeCount(), count0);
  });

  test('verificationRequired is refused (400, naming the recipient) before Documenso is called; nothing charged', async () => {
    const [balance0, creates0] = [await balance(), standin.calls['envelope.create']];
    const a = person('gated');
    const res = await create([{ ...a, verificationRequired: true } as Recipient]);
    const body = assertError(res, 400, 'VALIDATION_ERROR');
    assert.match(body.error, /recipients\.0\.verificationRequired/);
    assert.equal(standin.calls['envelope.create'], creates0);
    assert.equal(await balance(), balance0);
  });

  test("a transaction that fails after the stage deletes Documenso's draft", async () => {
    const a = person('tx');
    const ctx = { actor: { customerId: t.customer.id, mode: 'live' as const, via: 'api_key' as const, keyId: null }, requestId: 'r-1', ip: '127.0.0.1', testModeHeader: false };
    const plan = await t.container.envelopes.plan(ctx, { payload: { recipients: [{ ...a, role: 'SIGNER' }], fields: [sigField(a.email)] } as never, parts: [await samplePdf()], draft: true });
    assert.ok(standin.envelopes.has(plan.staged.engineEnvelopeId));
    await assert.rejects(t.container.envelopes.commitPlanned(t.container.db, plan, async () => Promise.reject(new Error('commit failed'))), /commit failed/);
    assert.equal(standin.envelopes.has(plan.staged.engineEnvelopeId), false);
  });

  test('cancel: CANCELLED, its event and the refund at once; Documenso cancels in a job after the commit (down → retried); a draft is cancelled by its mark', async () => {
    const del = (id: string) => t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${id}`, headers: bearer(t.customer.apiKey) });
    const env = await createSent([person('cx')]);
    const cancels = standin.calls['envelope.cancel'];
    standin.failNext(1, 'error', { route: 'envelope.cancel' });
    const res = await del(env.envelopeId);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(standin.calls['envelope.cancel'], cancels, 'Documenso is not called in the request');
    // Documenso's PENDING is the cancellation still to come: a read does not undo it.
    assert.equal((await status(env.envelopeId)).json().status, 'CANCELLED');
    assert.ok((await eventTypes(t, env.envelopeId)).includes('DOCUMENT_CANCELLED'));
    await assert.rejects(drain(t), /envelope\.cancel#\d+: Documenso answered 500/); // the job's first attempt: Documenso down
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'PENDING');
    await retryJobsNow();
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'CANCELLED');
    assert.equal((await status(env.envelopeId)).json().status, 'CANCELLED');
    assert.equal((await eventTypes(t, env.envelopeId)).filter((e) => e === 'DOCUMENT_CANCELLED').length, 1);
    assert.deepEqual((await ledgerFor(t, env.envelopeId)).map((l) => [l.direction, l.amountMicros]), [['debit', 100_000n], ['refund', 100_000n]]);
    assert.equal((await del(env.envelopeId)).statusCode, 200);
    await drain(t);
    assert.equal(standin.calls['envelope.cancel'], cancels + 2, 'a second DELETE calls Documenso no more');

    const draft = (await create([person('cx-draft')], { draft: true })).json() as Envelope;
    assert.equal((await del(draft.envelopeId)).statusCode, 200);
    await drain(t);
    assert.equal(standin.envelopes.get(draft.engineEnvelopeId)!.envelope.status, 'DRAFT');
    assert.equal((await status(draft.envelopeId)).json().status, 'CANCELLED');
  });

  test('Documenso hanging on a cancel holds no lock: the same and another customer are answered meanwhile', async () => {
    const other = await t.createCustomer(500);
    const env = await createSent([person('hang-cx')]);
    standin.failNext(1, 'hang', { route: 'envelope.cancel' });
    const cancels = standin.calls['envelope.cancel'];
    const cancelled = await timed(t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) }));
    assert.equal(cancelled.value.statusCode, 200, cancelled.value.body);
    assert.ok(cancelled.ms < 3000, `the cancel answered in ${cancelled.ms} ms`);
    // The cancellation job now hangs in Documenso (until the client's 4 s timeout).
    const job = drain(t).catch((err: Error) => err);
    while (standin.calls['envelope.cancel'] === cancels) await new Promise((r) => setTimeout(r, 10));
    const otherRead = await timed(t.app.inject({ url: '/v1/account', headers: bearer(other.apiKey) }));
    assert.equal(otherRead.value.statusCode, 200);
    assert.ok(otherRead.ms < 2000, `another customer waited ${otherRead.ms} ms`);
    const sameCreate = await timed(create([person('hang-cx-same')]));
    assert.equal(sameCreate.value.statusCode, 201, sameCreate.value.body);
    assert.ok(sameCreate.ms < 2000, `the same customer's create waited ${sameCreate.ms} ms`);
    assert.match(String(await job), /envelope\.cancel#\d+: Documenso did not answer/);
    await retryJobsNow();
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'CANCELLED');
    assert.equal((await status(env.envelopeId)).json().status, 'CANCELLED');
  });

  test('Documenso hanging on a resend holds no lock: another customer, and the same one resending and cancelling that envelope, are answered meanwhile', async () => {
    const other = await t.createCustomer(500);
    const a = person('hang-rs');
    const env = await createSent([a]);
    const resend = () => t.app.inject({ method: 'POST', url: `/v1/envelopes/${env.envelopeId}/resend`, headers: bearer(t.customer.apiKey) });
    standin.failNext(1, 'hang', { route: 'envelope.redistribute' });
    const calls = standin.calls['envelope.redistribute'];
    const hung = resend();
    while (standin.calls['envelope.redistribute'] === calls) await new Promise((r) => setTimeout(r, 10));
    const otherRead = await timed(t.app.inject({ url: '/v1/account', headers: bearer(other.apiKey) }));
    assert.equal(otherRead.value.statusCode, 200);
    assert.ok(otherRead.ms < 2000, `another customer waited ${otherRead.ms} ms`);
    // Documenso answers this one: the hung call holds nothing it needs.
    const { value: ok, ms } = await timed(resend());
    assert.equal(ok.statusCode, 200, ok.body);
    assert.ok(ms < 2000, `the same customer's second resend waited ${ms} ms`);
    assert.deepEqual(ok.json().resentTo.map((r: Recipient) => r.email), [a.email]);
    const sameCancel = await timed(t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) }));
    assert.equal(sameCancel.value.statusCode, 200, sameCancel.value.body);
    assert.ok(sameCancel.ms < 2000, `the same customer's cancel of the envelope waited ${sameCancel.ms} ms`);
    assertError(await hung, 503, 'DOCUMENSO_UNAVAILABLE');
    await drain(t);
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'CANCELLED');
    assertError(await resend(), 400, 'ENVELOPE_CANCELLED');
  });

  test('send of a draft: charged and PENDING at once, distributed by its job after the commit; Documenso down → retried, charged once', async () => {
    const a = person('draft');
    const res = await create([a], { draft: true });
    assert.equal(res.statusCode, 201, res.body);
    const env = res.json() as Envelope;
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'DRAFT');
    assert.equal((await status(env.envelopeId)).json().status, 'DRAFT');
    const balance0 = await balance();
    const key = newKey();
    const send = () => t.app.inject({ method: 'POST', url: `/v1/envelopes/${env.envelopeId}/send`, headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json', 'idempotency-key': key }, payload: '{}' });
    const distributes = standin.calls['envelope.distribute'];
    standin.failNext(1, 'error', { route: 'envelope.distribute' });
    const ok = await send();
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().status, 'PENDING');
    assert.equal(ok.json().recipients[0].signingUrl, env.recipients[0].signingUrl);
    assert.equal(standin.calls['envelope.distribute'], distributes, 'Documenso is not called in the request');
    assert.equal(await balance(), balance0 - 100_000);
    // Documenso's draft is the send still to come: a read does not make it a DRAFT again.
    assert.equal((await status(env.envelopeId)).json().status, 'PENDING');
    await assert.rejects(drain(t), /envelope\.distribute#\d+: Documenso answered 500/); // the job's first attempt: Documenso down
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'DRAFT');
    await retryJobsNow();
    assert.equal((await status(env.envelopeId)).json().status, 'SENT');
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'PENDING');
    assert.equal((await send()).headers['idempotent-replayed'], 'true');
    // Other tests' refunds land on this balance when the jobs drain: this envelope's ledger says it.
    assert.deepEqual((await ledgerFor(t, env.envelopeId)).map((l) => [l.direction, l.amountMicros]), [['debit', 100_000n]]);
  });

  test('a distribute Documenso carried out whose reply was lost: the send is charged once, and Signet follows Documenso', async () => {
    const a = person('lost-reply');
    const env = (await create([a], { draft: true })).json() as Envelope;
    standin.failNext(1, 'lost', { route: 'envelope.distribute' });
    const sent = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${env.envelopeId}/send`, headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json', 'idempotency-key': newKey() }, payload: '{}' });
    assert.equal(sent.statusCode, 200, sent.body);
    await assert.rejects(drain(t), /envelope\.distribute#\d+: Documenso could not be reached/); // the job: Documenso distributes, the reply is lost
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'PENDING');
    assert.equal((await status(env.envelopeId)).json().status, 'SENT');
    await standin.sign(env.engineEnvelopeId, a.email);
    assert.equal((await status(env.envelopeId)).json().status, 'COMPLETED');
    const distributes = standin.calls['envelope.distribute'];
    await retryJobsNow(); // the job's retry finds the work done
    assert.equal(standin.calls['envelope.distribute'], distributes);
    assert.deepEqual((await ledgerFor(t, env.envelopeId)).map((l) => [l.direction, l.amountMicros]), [['debit', 100_000n]]);
  });

  test('Documenso hanging on a send holds no lock: the same and another customer are answered meanwhile', async () => {
    const other = await t.createCustomer(500);
    const env = (await create([person('hang')], { draft: true })).json() as Envelope;
    standin.failNext(1, 'hang', { route: 'envelope.distribute' });
    const sent = await timed(t.app.inject({ method: 'POST', url: `/v1/envelopes/${env.envelopeId}/send`, headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json', 'idempotency-key': newKey() }, payload: '{}' }));
    assert.equal(sent.value.statusCode, 200, sent.value.body);
    assert.ok(sent.ms < 3000, `the send answered in ${sent.ms} ms`);
    // The distribution job now hangs in Documenso (until the client's 4 s timeout).
    const hung = standin.calls['envelope.distribute'];
    const job = drain(t).catch((err: Error) => err);
    while (standin.calls['envelope.distribute'] === hung) await new Promise((r) => setTimeout(r, 10));
    const otherRead = await timed(t.app.inject({ url: '/v1/account', headers: bearer(other.apiKey) }));
    assert.equal(otherRead.value.statusCode, 200);
    assert.ok(otherRead.ms < 2000, `another customer waited ${otherRead.ms} ms`);
    const sameCreate = await timed(create([person('hang-same')]));
    assert.equal(sameCreate.value.statusCode, 201, sameCreate.value.body);
    assert.ok(sameCreate.ms < 2000, `the same customer's create waited ${sameCreate.ms} ms`);
    assert.match(String(await job), /envelope\.distribute#\d+: Documenso did not answer/);
  });

  test("fields of a draft: added and removed in Documenso; another envelope's field id is not this one's", async () => {
    const a = person('fld');
    const draft = (await create([a], { draft: true })).json() as Envelope;
    const other = (await create([person('fld-other')], { draft: true })).json() as Envelope;
    const json = (method: 'POST' | 'DELETE', url: string, body?: unknown) =>
      t.app.inject({ method, url, headers: { ...bearer(t.customer.apiKey), ...(body ? { 'content-type': 'application/json' } : {}) }, ...(body ? { payload: JSON.stringify(body) } : {}) });
    const added = await json('POST', `/v1/envelopes/${draft.envelopeId}/fields`, { fields: [{ type: 'DATE', recipientEmail: a.email, page: 2, positionXPercent: 50, positionYPercent: 20, widthPercent: 20, heightPercent: 5 }] });
    assert.equal(added.statusCode, 200, added.body);
    const fieldId = added.json().fields[0].fieldId as number;
    const remote = () => standin.envelopes.get(draft.engineEnvelopeId)!.envelope.fields;
    const made = remote().find((f) => f.id === fieldId);
    assert.deepEqual(made && [made.type, made.page, Number(made.positionX)], ['DATE', 2, 50]);
    assertError(await json('DELETE', `/v1/envelopes/${draft.envelopeId}/fields/${other.fields[0].fieldId}`), 400, 'INVALID_FIELD_ID');
    assert.equal(standin.envelopes.get(other.engineEnvelopeId)!.envelope.fields.length, 1);
    assert.equal((await json('DELETE', `/v1/envelopes/${draft.envelopeId}/fields/${fieldId}`)).statusCode, 204);
    assert.equal(remote().some((f) => f.id === fieldId), false);
  });

  test("expiry and purge: Signet's sweeps queue a job per envelope, which calls Documenso with no transaction open", async () => {
    const other = await t.createCustomer(500);
    const env = await createSent([person('exp')]);
    await t.container.db.execute(sql`UPDATE envelopes SET expires_at = now() - interval '1 minute' WHERE id = ${env.envelopeId}`);
    // Documenso's cancel hangs: the sweep does not wait on it, and nothing waits on the expiry job.
    standin.failNext(1, 'hang', { route: 'envelope.cancel' });
    const cancels = standin.calls['envelope.cancel'];
    const started = Date.now();
    assert.equal(await t.container.db.transaction((tx) => t.container.envelopes.expireDue(tx)), 1);
    assert.ok(Date.now() - started < 2000, `the sweep took ${Date.now() - started} ms`);
    const job = drain(t).catch((err: Error) => err);
    while (standin.calls['envelope.cancel'] === cancels) await new Promise((r) => setTimeout(r, 10));
    const reads = Date.now();
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(other.apiKey) })).statusCode, 200);
    assert.equal((await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) })).statusCode, 200);
    assert.ok(Date.now() - reads < 2000, `reads waited ${Date.now() - reads} ms`);
    assert.match(String(await job), /envelope\.expire#\d+: Documenso did not answer/);
    await retryJobsNow();
    assert.equal(standin.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'CANCELLED');
    assert.equal((await status(env.envelopeId)).json().status, 'EXPIRED');
    assert.equal((await eventTypes(t, env.envelopeId)).filter((e) => e === 'DOCUMENT_EXPIRED').length, 1);

    await t.container.db.execute(sql`UPDATE envelopes SET storage_expires_at = now() - interval '1 minute' WHERE id = ${env.envelopeId}`);
    assert.equal(await t.container.db.transaction((tx) => t.container.envelopes.purgeDue(tx)), 1);
    await drain(t);
    assert.ok(standin.envelopes.get(env.engineEnvelopeId)!.envelope.deletedAt, 'deleted in Documenso');
    assertError(await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download?version=original`, headers: bearer(t.customer.apiKey) }), 410, 'DOCUMENT_PURGED');
  });

  test('from a template (markers, signing order): the stored PDF and fields go to Documenso, sequential', async () => {
    const pdf = await makePdf([[{ text: '{{signature, r1}}', x: 72, y: 600 }, { text: '{{signature, r2}}', x: 306, y: 600 }, { text: '{{date, r1}}', x: 72, y: 560 }]]);
    const slots = [1, 2].map((n) => ({ email: `slot${n}@example.com`, name: `Slot ${n}`, role: 'SIGNER', signingOrder: n }));
    const mp = multipart([{ name: 'file', value: pdf, filename: 'nda.pdf' }, { name: 'payload', value: JSON.stringify({ title: 'NDA', recipients: slots }) }]);
    const tpl = await t.app.inject({ method: 'POST', url: '/v1/templates', headers: { ...bearer(t.customer.apiKey), 'content-type': mp.contentType }, payload: mp.body });
    assert.equal(tpl.statusCode, 201, tpl.body);
    const [alice, bob] = [{ id: 1, email: uniq('alice'), name: 'Alice' }, { id: 2, email: uniq('bob'), name: 'Bob' }];
    const res = await t.app.inject({
      method: 'POST',
      url: `/v1/templates/${tpl.json().templateId}/from-template`,
      headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json', 'idempotency-key': newKey() },
      payload: JSON.stringify({ recipients: [alice, bob] }),
    });
    assert.equal(res.statusCode, 201, res.body);
    const env = res.json() as Envelope;
    const remote = standin.envelopes.get(env.engineEnvelopeId)!;
    assert.deepEqual(remote.items[0].original, pdf);
    assert.equal(remote.envelope.documentMeta.signingOrder, 'SEQUENTIAL');
    const emailOf = new Map(remote.envelope.recipients.map((r) => [r.id, r.email]));
    assert.deepEqual(remote.envelope.fields.map((f) => [f.type, emailOf.get(f.recipientId)]).sort(), [['DATE', alice.email], ['SIGNATURE', alice.email], ['SIGNATURE', bob.email]].sort());
    assert.deepEqual(env.fields.map((f) => f.fieldId).sort(), remote.envelope.fields.map((f) => f.id).sort());
    await drain(t);
    // Sequential: only the first is invited; Bob cannot sign before Alice.
    assert.deepEqual(remote.envelope.recipients.map((r) => r.sendStatus), ['SENT', 'NOT_SENT']);
    await assert.rejects(standin.sign(env.engineEnvelopeId, bob.email), /out of turn/);
    await standin.sign(env.engineEnvelopeId, alice.email);
    assert.equal((await status(env.envelopeId)).json().status, 'PARTIALLY_SIGNED');
  });

  test("another customer's envelope is 404 everywhere", async () => {
    const other = await t.createCustomer(500);
    const env = await createSent([person('own')]);
    for (const url of [`/v1/envelopes/${env.envelopeId}`, `/v1/envelopes/${env.envelopeId}/status`, `/v1/envelopes/${env.envelopeId}/download?version=original`]) {
      assertError(await t.app.inject({ url, headers: bearer(other.apiKey) }), 404, 'ENVELOPE_NOT_FOUND');
    }
  });

  test("after a restart (no links in memory) the stored copy's links are read from Documenso; while it is down they are empty, not an error", async () => {
    const env = await createSent([person('cold')]);
    const ids = standin.envelopes.get(env.engineEnvelopeId)!.envelope.recipients.map((r) => String(r.id));
    const cold = () =>
      createDocumensoEngine({ client: createDocumensoClient({ url: standin.url, apiKey: standin.apiKey, retries: 0 }), webappUrl: standin.origin, envelopeIdsOfRecipients: createEnvelopesRepo().engineEnvelopeIdsOfRecipients });
    const links = await cold().linksOf(t.container.db, ids);
    assert.deepEqual([...links.values()], [env.recipients[0].signingUrl]);
    standin.failNext(1, 'error', { route: 'envelope.get' });
    assert.deepEqual([...(await cold().linksOf(t.container.db, ids)).values()], ['']);
  });

  test('/health names the engine and its circuit, never the credentials', async () => {
    const res = await t.app.inject({ url: '/health' });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json().engine, { name: 'documenso', circuit: 'closed' });
    assert.equal(res.body.includes(standin.apiKey) || res.body.includes(SECRET), false);
  });

  test('SIGNING_ENGINE=documenso without its variables refuses to start, naming the first missing', () => {
    assert.throws(() => loadConfig({ DATA_DIR: '/nonexistent', SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: standin.url }), (err: unknown) => err instanceof ConfigError && /DOCUMENSO_API_KEY: required when SIGNING_ENGINE=documenso/.test(err.message));
  });
});
