import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { Signet, SignetError, SignetWebhookError, verifyWebhook } from '../client/src/index.js';
import { recipientToken, samplePdf, sigField, signAs, signer } from './fixtures/envelopes.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';
import { createTestApp, type TestApp } from './harness.js';

// @signet/client against a live Signet (the harness's app listening on port 0, its worker running).
let t: TestApp;
let baseUrl: string;
let signet: Signet;
let dir: string;
let receiver: Receiver | undefined;
const proxies: Server[] = [];

before(async () => {
  t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '1s' }, creditCents: 1000 });
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  await t.container.worker.start();
  signet = new Signet({ baseUrl, apiKey: t.customer.apiKey, retryDelayMs: 20 });
  dir = mkdtempSync(path.join(tmpdir(), 'signet-client-'));
});
after(async () => {
  await Promise.all(proxies.map((p) => new Promise((resolve) => p.close(resolve))));
  await receiver?.close();
  await t?.close();
  rmSync(dir, { recursive: true, force: true });
});

const recipients = (n: number) => [{ email: signer(n).email, name: signer(n).name, role: 'SIGNER' as const }];
const fields = (n: number) => [sigField(signer(n).email) as { type: 'SIGNATURE'; recipientEmail: string; page: number; positionXPercent: number; positionYPercent: number; widthPercent: number; heightPercent: number }];

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    t.container.worker.wake();
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * A proxy in front of the real server that lets each request through but, for the first `lose`
 * mutations, hides the answer: a 503, or a connection dropped after the server did the work.
 */
async function lossyProxy(lose: number, how: '503' | 'drop'): Promise<{ url: string; keys: string[]; statuses: number[] }> {
  const seen = { keys: [] as string[], statuses: [] as number[] };
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'GET') seen.keys.push(String(req.headers['idempotency-key']));
      const hide = req.method !== 'GET' && lose-- > 0;
      const upstream = httpRequest(`${baseUrl}${req.url}`, { method: req.method, headers: req.headers }, (up) => {
        const body: Buffer[] = [];
        up.on('data', (c: Buffer) => body.push(c));
        up.on('end', () => {
          seen.statuses.push(up.statusCode!);
          if (hide && how === 'drop') return res.socket?.destroy();
          if (hide) return res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '0' }).end(JSON.stringify({ error: 'proxy lost it', code: 'SERVICE_UNAVAILABLE' }));
          res.writeHead(up.statusCode!, up.headers).end(Buffer.concat(body));
        });
      });
      upstream.end(Buffer.concat(chunks));
    });
  });
  proxies.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ...seen };
}

describe('@signet/client: envelopes', () => {
  test('create from a path, from bytes and from a stream; get, list with the iterator, download; documents.verify the sealed PDF', async () => {
    const pdf = await samplePdf();
    const file = path.join(dir, 'nda.pdf');
    writeFileSync(file, pdf);
    const fromPath = await signet.envelopes.create({ file, title: 'From a path', recipients: recipients(1), fields: fields(1), meta: { subject: 'Please sign' } });
    const fromBytes = await signet.envelopes.create({ file: pdf, title: 'From bytes', recipients: recipients(2), fields: fields(2) });
    const fromStream = await signet.envelopes.create({ file: Readable.from([Buffer.from(pdf)]), title: 'From a stream', recipients: recipients(3), fields: fields(3) });
    for (const e of [fromPath, fromBytes, fromStream]) assert.equal(e.status, 'PENDING');

    const got = await signet.envelopes.get(fromPath.envelopeId);
    assert.equal(got.title, 'From a path');
    assert.equal(got.recipients[0].email, signer(1).email);

    const page = await signet.envelopes.list({ limit: 2 });
    assert.equal(page.data.length, 2);
    assert.ok(page.total >= 3);
    const seen: string[] = [];
    for await (const e of signet.envelopes.all({ limit: 1 })) seen.push(e.envelopeId);
    assert.deepEqual(seen.slice(0, 3).sort(), [fromPath, fromBytes, fromStream].map((e) => e.envelopeId).sort(), 'the iterator walks page after page');
    assert.equal(new Set(seen).size, seen.length);

    const original = await signet.envelopes.download(fromBytes.envelopeId, { version: 'original' });
    assert.ok(original instanceof Uint8Array);
    assert.equal(Buffer.from(original.subarray(0, 5)).toString(), '%PDF-');

    await signAs(t, recipientToken(got as never, signer(1).email));
    await until('COMPLETED', async () => (await signet.envelopes.status(fromPath.envelopeId)).status === 'COMPLETED');
    const sealed = await signet.envelopes.download(fromPath.envelopeId);
    assert.ok(sealed.length > pdf.length);
    const verdict = await signet.documents.verify(sealed);
    assert.equal(verdict.status, 'SEALED');
    assert.equal(verdict.envelope?.envelopeId, fromPath.envelopeId);
  });

  test('errors throw SignetError with status, code, message and details', async () => {
    await assert.rejects(signet.envelopes.get('00000000-0000-4000-8000-000000000000'), (e: unknown) => {
      assert.ok(e instanceof SignetError);
      assert.equal(e.status, 404);
      assert.equal(e.code, 'ENVELOPE_NOT_FOUND');
      assert.ok(e.message.length > 0);
      assert.ok(e.requestId);
      return true;
    });
    await assert.rejects(signet.envelopes.create({ file: await samplePdf(), recipients: [{ email: 'not-an-email', name: 'X', role: 'SIGNER' }] }), (e: unknown) => {
      assert.ok(e instanceof SignetError);
      assert.equal(e.code, 'VALIDATION_ERROR');
      assert.ok(e.details?.some((d) => d.path.includes('email')), JSON.stringify(e.details));
      return true;
    });
    const keyless = new Signet({ baseUrl, apiKey: 'svc_live_' + '0'.repeat(32) });
    await assert.rejects(keyless.account.get(), (e: unknown) => e instanceof SignetError && e.status === 401);
  });

  test('a lost answer (503, then a dropped connection) is retried with the same Idempotency-Key and charged once', async () => {
    for (const how of ['503', 'drop'] as const) {
      const proxy = await lossyProxy(1, how);
      const viaProxy = new Signet({ baseUrl: proxy.url, apiKey: t.customer.apiKey, retryDelayMs: 10 });
      const before = (await signet.account.get()).balanceMicros;
      const env = await viaProxy.envelopes.create({ file: await samplePdf(), title: `Lost ${how}`, recipients: recipients(4), fields: fields(4) });
      assert.equal(env.title, `Lost ${how}`);
      assert.equal(proxy.keys.length, 2, `${how}: sent twice`);
      assert.equal(proxy.keys[0], proxy.keys[1], `${how}: with the same key`);
      assert.match(proxy.keys[0], /^[0-9a-f-]{36}$/);
      assert.deepEqual(proxy.statuses, [201, 201], `${how}: the retry was answered from the first call's record`);
      assert.equal((await signet.account.get()).balanceMicros, before - 100_000, `${how}: one charge of USD 0.10`);
    }
  });
});

describe('@signet/client: templates', () => {
  test('create from bytes, get, list, update, make an envelope from it, delete', async () => {
    const tpl = await signet.templates.create({ file: await samplePdf(), title: 'Template NDA', recipients: [{ email: 'slot@example.com', name: 'Slot', role: 'SIGNER' }], fields: [{ type: 'SIGNATURE', recipientEmail: 'slot@example.com', page: 1, positionX: 10, positionY: 70, width: 25, height: 6 }] });
    assert.equal((await signet.templates.get(tpl.templateId)).title, 'Template NDA');
    const all: string[] = [];
    for await (const x of signet.templates.all()) all.push(x.templateId);
    assert.ok(all.includes(tpl.templateId));
    await signet.templates.update(tpl.templateId, { title: 'Template NDA v2' });
    const env = await signet.templates.createEnvelope(tpl.templateId, { recipients: [{ id: 1, email: 'grace@example.com', name: 'Grace Hopper' }] });
    assert.equal(env.title, 'Template NDA v2');
    assert.equal(env.recipients[0].email, 'grace@example.com');
    await signet.templates.delete(tpl.templateId);
    await assert.rejects(signet.templates.get(tpl.templateId), (e: unknown) => e instanceof SignetError && e.code === 'TEMPLATE_NOT_FOUND');
  });
});

describe('@signet/client: verifications', () => {
  test('create, get, status, iterate, cancel', async () => {
    const v = await signet.verifications.create({ type: 'email', email: 'ada@example.com', name: 'Ada' });
    assert.equal((await signet.verifications.get(v.verificationId)).email, 'ada@example.com');
    assert.ok((await signet.verifications.status(v.verificationId)).status);
    const ids: string[] = [];
    for await (const x of signet.verifications.all()) ids.push(x.verificationId);
    assert.ok(ids.includes(v.verificationId));
    const cancelled = await signet.verifications.cancel(v.verificationId);
    assert.equal(cancelled.status, 'canceled');
  });
});

describe('@signet/client: webhooks', () => {
  test('create, get, list, update; a real delivery verifies with verifyWebhook, and a tampered one does not', async () => {
    receiver = await startReceiver();
    const wh = await signet.webhooks.create({ url: receiver.url(), events: ['envelope.sent'] });
    const alt = await signet.webhooks.create({ url: receiver.url('/alt'), events: ['envelope.sent'], format: 'alt' });
    assert.match(wh.secret, /^whsec_/);
    assert.equal((await signet.webhooks.get(wh.id)).url, receiver.url());
    assert.ok((await signet.webhooks.list()).data.some((w) => w.id === wh.id));
    await signet.webhooks.update(wh.id, { description: 'the test receiver' });

    await signet.envelopes.create({ file: await samplePdf(), title: 'Hooked', recipients: recipients(5), fields: fields(5) });
    const hooked = await until('a delivery', async () => receiver!.requests.find((r) => JSON.parse(r.raw.toString()).envelope?.title === 'Hooked'));
    const event = verifyWebhook<{ event: string; envelope: { title: string } }>({ body: hooked.raw.toString(), signature: hooked.headers['x-service-signature'], secret: wh.secret });
    assert.equal(event.event, 'envelope.sent');
    assert.equal(event.envelope.title, 'Hooked');
    assert.throws(() => verifyWebhook({ body: hooked.raw.toString().replace('Hooked', 'Hacked'), signature: hooked.headers['x-service-signature'], secret: wh.secret }), SignetWebhookError);
    assert.throws(() => verifyWebhook({ body: hooked.raw, signature: hooked.headers['x-service-signature'], secret: wh.secret, now: new Date(Date.now() + 301_000) }), /tolerance/);
    assert.throws(() => verifyWebhook({ body: hooked.raw, signature: undefined, secret: wh.secret }), SignetWebhookError);

    // The alt format signs sha256=<HMAC of the body>, with no timestamp.
    const altHooked = await until('an alt delivery', async () => receiver!.requests.find((r) => r.path === '/alt'));
    assert.match(String(altHooked.headers['x-service-signature']), /^sha256=/);
    assert.equal(verifyWebhook<{ event: string }>({ body: altHooked.raw, signature: altHooked.headers['x-service-signature'], secret: alt.secret }).event, 'envelope.sent');
    assert.throws(() => verifyWebhook({ body: altHooked.raw, signature: altHooked.headers['x-service-signature'], secret: wh.secret }), /mismatch/);
    await signet.webhooks.delete(alt.id);

    const deliveries = await until('the delivery recorded', async () => {
      const page = await signet.webhooks.deliveries(wh.id);
      return page.data.find((d) => d.status === 'SUCCESS') && page;
    });
    assert.ok(deliveries.data.length >= 1);
    await signet.webhooks.delete(wh.id);
  });
});

describe('@signet/client: account', () => {
  test('get and update', async () => {
    const before = await signet.account.get();
    assert.equal(before.accountId, t.customer.id);
    const updated = await signet.account.update({ displayName: 'Ada at Analytical Engines' });
    assert.equal(updated.displayName, 'Ada at Analytical Engines');
    assert.equal((await signet.account.get()).displayName, 'Ada at Analytical Engines');
  });

  test('signet.api is the raw typed client for every route', async () => {
    const { data, response } = await signet.api.GET('/v1/account/usage', { params: { query: { limit: 5 } } });
    assert.equal(response.status, 200);
    assert.ok(Array.isArray(data?.data));
  });
});
