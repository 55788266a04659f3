/**
 * What a person sends a webhook by hand: POST /v1/webhooks/{id}/test (a signed `ping` to that endpoint
 * only) and POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver (the same payload as a new,
 * linked delivery); another customer's webhook or delivery, a disabled endpoint, a pending delivery,
 * bad ids and the hourly cap.
 */
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError } from './fixtures/envelopes.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';

let t: TestApp;
const receivers: Receiver[] = [];
before(async () => {
  t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
  await t.container.worker.start();
});
after(async () => {
  await t?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(): Promise<Receiver> {
  const r = await startReceiver();
  receivers.push(r);
  return r;
}

async function register(url: string, events: string[] = ['envelope.completed'], apiKey = t.customer.apiKey): Promise<{ id: string; secret: string }> {
  const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(apiKey), payload: { url, events } });
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

const sendTest = (id: string, apiKey = t.customer.apiKey) => t.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/test`, headers: bearer(apiKey) });
const redeliver = (id: string, deliveryId: string, apiKey = t.customer.apiKey) =>
  t.app.inject({ method: 'POST', url: `/v1/webhooks/${id}/deliveries/${deliveryId}/redeliver`, headers: bearer(apiKey) });

async function deliveryStatus(webhookId: string, deliveryId: string): Promise<string> {
  const res = await t.app.inject({ url: `/v1/webhooks/${webhookId}/deliveries?limit=100`, headers: bearer(t.customer.apiKey) });
  return (res.json().data as { id: string; status: string }[]).find((d) => d.id === deliveryId)?.status ?? 'missing';
}

async function settled(webhookId: string, deliveryId: string): Promise<string> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    t.container.worker.wake();
    const s = await deliveryStatus(webhookId, deliveryId);
    if (s !== 'PENDING') return s;
    if (Date.now() > deadline) throw new Error(`delivery ${deliveryId} still pending`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('POST /v1/webhooks/{id}/test', () => {
  test('202 with the delivery; the endpoint receives a signed ping, other endpoints nothing', async () => {
    const r = await receiver();
    const other = await receiver();
    const hook = await register(r.url(), ['*']);
    await register(other.url(), ['*']);
    const res = await sendTest(`wh_${hook.id}`);
    assert.equal(res.statusCode, 202, res.body);
    const d = res.json();
    assert.equal(d.event, 'ping');
    assert.equal(d.envelopeId, null);
    assert.equal(d.redeliveryOf, null);
    assert.equal(d.deliveryId, `dlv_${d.id}`);
    const [got] = await r.waitFor(1);
    assert.equal(got.headers['x-service-event'], 'ping');
    assert.equal(got.headers['x-service-delivery-id'], `dlv_${d.id}`);
    const body = JSON.parse(got.raw.toString());
    assert.equal(body.event, 'ping');
    assert.deepEqual(body.envelope, {});
    const [, ts, v1] = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(got.headers['x-service-signature']))!;
    assert.equal(createHmac('sha256', hook.secret).update(`${ts}.${got.raw.toString()}`).digest('hex'), v1);
    assert.equal(await settled(hook.id, d.id), 'SUCCESS');
    assert.equal(other.requests.length, 0);
  });

  test("another customer's webhook is 404; unknown and malformed ids are 404", async () => {
    const stranger = await t.createCustomer(0);
    const hook = await register('http://127.0.0.1:9/hook', ['*'], stranger.apiKey);
    assertError(await sendTest(hook.id), 404, 'WEBHOOK_NOT_FOUND');
    assertError(await sendTest('00000000-0000-4000-8000-000000000000'), 404, 'WEBHOOK_NOT_FOUND');
    assertError(await sendTest('not-an-id'), 404, 'WEBHOOK_NOT_FOUND');
    // A test key sees test registrations only.
    assertError(await sendTest(hook.id, stranger.testApiKey), 404, 'WEBHOOK_NOT_FOUND');
  });

  test('a disabled endpoint is 409 WEBHOOK_DISABLED and gets nothing', async () => {
    const r = await receiver();
    const hook = await register(r.url());
    const off = await t.app.inject({ method: 'PUT', url: `/v1/webhooks/${hook.id}`, headers: bearer(t.customer.apiKey), payload: { active: false } });
    assert.equal(off.statusCode, 200, off.body);
    assertError(await sendTest(hook.id), 409, 'WEBHOOK_DISABLED');
    assert.equal(r.requests.length, 0);
  });

  test('at most 20 test events and redeliveries per webhook per hour: the 21st is 429 WEBHOOK_MANUAL_LIMIT', async () => {
    const hook = await register('http://127.0.0.1:9/hook');
    for (let i = 0; i < 20; i++) assert.equal((await sendTest(hook.id)).statusCode, 202);
    const res = await sendTest(hook.id);
    assertError(res, 429, 'WEBHOOK_MANUAL_LIMIT');
    assert.equal(res.json().limit, 20);
    // Another registration has its own allowance.
    assert.equal((await sendTest((await register('http://127.0.0.1:9/hook')).id)).statusCode, 202);
  });
});

describe('POST /v1/webhooks/{id}/deliveries/{deliveryId}/redeliver', () => {
  test('202: the same payload again as a new delivery linked to the first, both kept', async () => {
    const r = await receiver();
    const hook = await register(r.url());
    const first = (await sendTest(hook.id)).json();
    assert.equal(await settled(hook.id, first.id), 'SUCCESS');
    const res = await redeliver(hook.id, `dlv_${first.id}`);
    assert.equal(res.statusCode, 202, res.body);
    const again = res.json();
    assert.notEqual(again.id, first.id);
    assert.equal(again.redeliveryOf, first.id);
    assert.equal(again.event, first.event);
    const got = await r.waitFor(2);
    assert.equal(got[1].headers['x-service-delivery-id'], `dlv_${again.id}`);
    assert.deepEqual(JSON.parse(got[1].raw.toString()).envelope, JSON.parse(got[0].raw.toString()).envelope);
    assert.equal(await settled(hook.id, again.id), 'SUCCESS');
    // A redelivery of the redelivery still points at the original.
    const third = (await redeliver(hook.id, again.id)).json();
    assert.equal(third.redeliveryOf, first.id);
  });

  test("another customer's delivery, another webhook's delivery and unknown ids are 404", async () => {
    const stranger = await t.createCustomer(0);
    const theirs = await register('http://127.0.0.1:9/hook', ['*'], stranger.apiKey);
    const theirDelivery = (await sendTest(theirs.id, stranger.apiKey)).json();
    const mine = await register('http://127.0.0.1:9/hook');
    assertError(await redeliver(theirs.id, theirDelivery.id), 404, 'WEBHOOK_NOT_FOUND');
    assertError(await redeliver(mine.id, theirDelivery.id), 404, 'DELIVERY_NOT_FOUND');
    assertError(await redeliver(mine.id, '00000000-0000-4000-8000-000000000000'), 404, 'DELIVERY_NOT_FOUND');
    assertError(await redeliver(mine.id, 'dlv_nope'), 404, 'DELIVERY_NOT_FOUND');
  });

  test('a pending delivery is 409 DELIVERY_PENDING; a disabled endpoint 409 WEBHOOK_DISABLED', async () => {
    // Port 9 refuses: the first attempt fails and the delivery waits a minute for its retry, PENDING.
    {
      const hook = await register('http://127.0.0.1:9/hook');
      const d = (await sendTest(hook.id)).json();
      assertError(await redeliver(hook.id, d.id), 409, 'DELIVERY_PENDING');
      await t.app.inject({ method: 'PUT', url: `/v1/webhooks/${hook.id}`, headers: bearer(t.customer.apiKey), payload: { active: false } });
      assertError(await redeliver(hook.id, d.id), 409, 'WEBHOOK_DISABLED');
    }
  });
});
