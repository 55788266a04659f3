import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { bearer, createTestApp, OPS_TOKEN, type TestApp } from './harness.js';
import { assertError, envelopeBody, makePdf, multipart, newKey } from './fixtures/envelopes.js';

const MAX_PDF_BYTES = 20_000;

describe('an oversize upload to a listening server', () => {
  let t: TestApp;
  let base: string;
  before(async () => {
    t = await createTestApp({ env: { MAX_PDF_BYTES: String(MAX_PDF_BYTES) } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    base = `http://127.0.0.1:${(t.app.server.address() as AddressInfo).port}`;
  });
  after(() => t.close());

  const oversize = async (bytes: number) => {
    const pdf = await makePdf(1);
    return envelopeBody([Buffer.concat([Buffer.from(pdf), Buffer.alloc(bytes, 0x20)])], { recipients: [{ email: 'a@example.com', name: 'A' }], fields: [] });
  };

  test("Node's fetch reads 413 PDF_TOO_LARGE, not a reset connection", async () => {
    for (const size of [5_000_000, 40_000_000]) {
      const { body, contentType } = await oversize(size);
      const res = await fetch(`${base}/v1/envelopes`, {
        method: 'POST',
        headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': contentType },
        body: new Uint8Array(body),
      });
      assert.equal(res.status, 413);
      const json = (await res.json()) as { code: string; maxBytes: number };
      assert.equal(json.code, 'PDF_TOO_LARGE');
      assert.equal(json.maxBytes, MAX_PDF_BYTES);
    }
  });

  test("Node's fetch streaming a file at network pace reads 413 PDF_TOO_LARGE, not EPIPE", async () => {
    const { body, contentType } = await oversize(5_000_000);
    // The reset is a race (the answer against the kernel's RST), so several attempts, each by a
    // customer whose key is not cached yet, as in the first request of a client.
    for (const withLength of [true, true, true, true, false, false]) {
      const c = await t.createCustomer(500);
      // A file read from disk or a slower link: the body arrives while the answer is already sent.
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          for (let i = 0; i < body.length; i += 65_536) {
            controller.enqueue(new Uint8Array(body.subarray(i, i + 65_536)));
            await new Promise((r) => setTimeout(r, 2));
          }
          controller.close();
        },
      });
      const res = await fetch(`${base}/v1/envelopes`, {
        method: 'POST',
        headers: {
          ...bearer(c.apiKey),
          'idempotency-key': newKey(),
          'content-type': contentType,
          ...(withLength ? { 'content-length': String(body.length) } : {}),
        },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      assert.equal(res.status, 413, `with Content-Length: ${withLength}`);
      assert.equal(((await res.json()) as { code: string }).code, 'PDF_TOO_LARGE');
    }
  });

  test('a chunked oversize body (no Content-Length) is also answered 413 PDF_TOO_LARGE', async () => {
    const { body, contentType } = await oversize(5_000_000);
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < body.length; i += 65_536) controller.enqueue(new Uint8Array(body.subarray(i, i + 65_536)));
        controller.close();
      },
    });
    const res = await fetch(`${base}/v1/envelopes`, {
      method: 'POST',
      headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': contentType },
      body: stream,
      duplex: 'half',
    } as RequestInit);
    assert.equal(res.status, 413);
    assert.equal(((await res.json()) as { code: string }).code, 'PDF_TOO_LARGE');
  });

  test('Expect: 100-continue with an oversize Content-Length gets 413 without sending the body', async () => {
    const { contentType } = await oversize(0);
    const answer = await new Promise<{ status: number; body: string; continued: boolean }>((resolve, reject) => {
      let continued = false;
      const req = httpRequest(`${base}/v1/envelopes`, {
        method: 'POST',
        headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': contentType, 'content-length': String(50_000_000), expect: '100-continue' },
      });
      req.on('continue', () => {
        continued = true;
        req.destroy();
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: text, continued }));
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(answer.continued, false, 'no 100 Continue for a body that will be refused');
    assert.equal(answer.status, 413);
    assert.equal(JSON.parse(answer.body).code, 'PDF_TOO_LARGE');
  });

  test('Expect: 100-continue with an acceptable size is continued as usual', async () => {
    const pdf = await makePdf(1);
    const { body, contentType } = envelopeBody([pdf], 'not json');
    const answer = await new Promise<{ status: number; continued: boolean }>((resolve, reject) => {
      let continued = false;
      const req = httpRequest(`${base}/v1/envelopes`, {
        method: 'POST',
        headers: { ...bearer(t.customer.apiKey), 'idempotency-key': newKey(), 'content-type': contentType, 'content-length': String(body.length), expect: '100-continue' },
      });
      req.on('continue', () => {
        continued = true;
        req.end(body);
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode!, continued }));
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(answer.continued, true);
    assert.equal(answer.status, 400, 'the body was read and judged (a malformed payload)');
  });

  test('a client that keeps sending far past the limit is cut off after a bounded drain', async () => {
    const { contentType } = await oversize(0);
    const port = (t.app.server.address() as AddressInfo).port;
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    socket.write(
      `POST /v1/envelopes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.customer.apiKey}\r\nIdempotency-Key: ${newKey()}\r\n` +
        `Content-Type: ${contentType}\r\nTransfer-Encoding: chunked\r\n\r\n`,
    );
    let received = '';
    socket.on('data', (d) => (received += d.toString()));
    const closed = new Promise<void>((r) => socket.once('close', () => r()));
    socket.on('error', () => {});
    const chunk = Buffer.alloc(1 << 20, 0x20);
    let sent = 0;
    let open = true;
    socket.once('close', () => (open = false));
    // Keep writing up to 1 GiB: the server must hang up long before.
    while (open && sent < 1 << 30) {
      // Every write of the framing is made: && would skip the CRLF after a chunk the kernel did not take at once.
      const ok = [socket.write(`${chunk.length.toString(16)}\r\n`), socket.write(chunk), socket.write('\r\n')].every(Boolean);
      sent += chunk.length;
      if (!ok) await new Promise((r) => setTimeout(r, 1));
    }
    await closed;
    assert.ok(sent < 1 << 30, `the server hung up (after ${sent} bytes)`);
    assert.match(received, /^HTTP\/1\.1 413/);
  });
});

/**
 * Only the routes that take a document (their schema consumes multipart/form-data: envelope and
 * template creates, document verification) read an upload. Anywhere else one is refused 415 before a
 * byte of it is read: it used to be streamed to disk and hashed first, up to MAX_PDF_BYTES, on every
 * public POST at the general rate.
 */
describe('a file sent to a route that takes none', () => {
  let t: TestApp;
  let port: number;
  // The shape of a link token; it names nobody, which the route would only say after reading the body.
  const token = 'A'.repeat(43);
  before(async () => {
    t = await createTestApp({ env: { MAX_PDF_BYTES: String(MAX_PDF_BYTES) } });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    port = (t.app.server.address() as AddressInfo).port;
  });
  after(() => t.close());

  const upload = () => multipart([{ name: 'file', value: Buffer.alloc(10_000, 0x20), filename: 'big.pdf' }, { name: 'payload', value: '{}' }]);

  test('is 415 UNSUPPORTED_MEDIA_TYPE on the public, signing, dashboard, webhook, customer and operator routes', async () => {
    const { body, contentType } = upload();
    const routes: [string, Record<string, string>][] = [
      [`/sign/${token}/reject`, {}],
      [`/sign/${token}/complete`, {}],
      [`/sign/${token}/consent`, {}],
      [`/sign/${token}/verification/code`, {}],
      [`/verify/${token}/code`, {}],
      ['/dashboard/sign-out', {}],
      ['/dashboard/sign-in/email', {}],
      ['/webhooks/stripe', {}],
      ['/v1/auth/verify', {}],
      ['/v1/envelopes/0b0c6f1e-8c1d-4a4e-9a51-6f0e2b7d9c11/send', { ...bearer(t.customer.apiKey), 'idempotency-key': newKey() }],
      ['/v1/webhooks', bearer(t.customer.apiKey)],
      ['/mcp', bearer(t.customer.apiKey)],
      ['/ops/customers', { authorization: `Bearer ${OPS_TOKEN}` }],
    ];
    for (const [url, headers] of routes) {
      const res = await t.app.inject({ method: 'POST', url, headers: { ...headers, 'content-type': contentType }, payload: body });
      assert.equal(res.statusCode, 415, `${url}: ${res.body}`);
      // The dashboard answers with a page, as it does every error.
      if (!url.startsWith('/dashboard/')) assertError(res, 415, 'UNSUPPORTED_MEDIA_TYPE');
    }
    // Authentication still comes first, and a path no route names is still 404.
    assertError(await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { 'content-type': contentType }, payload: body }), 401, 'UNAUTHORIZED');
    assertError(await t.app.inject({ method: 'POST', url: '/no/such/route', headers: { 'content-type': contentType }, payload: body }), 404, 'NOT_FOUND');
  });

  test('the answer comes while the body is still arriving: nothing of it was waited for', async () => {
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((r) => socket.once('connect', () => r()));
    socket.on('error', () => {});
    let answer = '';
    socket.on('data', (d) => (answer += d.toString()));
    const boundary = 'open-upload';
    socket.write(`POST /sign/${token}/reject HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=${boundary}\r\nTransfer-Encoding: chunked\r\n\r\n`);
    const head = Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.pdf"\r\n\r\n${' '.repeat(1_000)}`);
    socket.write(`${head.length.toString(16)}\r\n${head.toString('latin1')}\r\n`, 'latin1');
    // The body never ends: only a refusal before reading it can be answered.
    for (let i = 0; i < 250 && !/\r\n\r\n/.test(answer); i++) await sleep(20);
    socket.destroy();
    assert.match(answer, /^HTTP\/1\.1 415 /, answer || 'no answer while the body was open');
    assert.match(answer, /"code":"UNSUPPORTED_MEDIA_TYPE"/);
  });

  test('Expect: 100-continue is answered 415 without the body being sent, past the JSON limit but within an upload\'s', async () => {
    // Over the 1 MiB a JSON body may have, under what an upload may (MAX_PDF_BYTES + 1 MiB).
    const length = 1024 * 1024 + MAX_PDF_BYTES / 2;
    const answer = await new Promise<{ status: number; body: string; continued: boolean }>((resolve, reject) => {
      let continued = false;
      const req = httpRequest(`http://127.0.0.1:${port}/sign/${token}/reject`, {
        method: 'POST',
        headers: { 'content-type': upload().contentType, 'content-length': String(length), expect: '100-continue' },
      });
      req.on('continue', () => {
        continued = true;
        req.destroy();
      });
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (d) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode!, body: text, continued }));
      });
      req.on('error', reject);
      req.flushHeaders();
    });
    assert.equal(answer.continued, false, 'no 100 Continue for an upload that will be refused');
    assert.equal(answer.status, 415);
    assert.equal(JSON.parse(answer.body).code, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('a route that takes a document still reads it', async () => {
    const { body, contentType } = multipart([{ name: 'file', value: await makePdf(1), filename: 'a.pdf' }]);
    const res = await t.app.inject({ method: 'POST', url: '/v1/documents/verify', headers: { 'content-type': contentType }, payload: body });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, 'NOT_SEALED');
  });
});
