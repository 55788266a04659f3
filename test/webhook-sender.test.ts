// test-lane: once (opens no database)
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { after, describe, test } from 'node:test';
import forge from 'node-forge';
import { postWebhook } from '../src/providers/webhooks/http-sender.js';
import { checkResolvable, parseWebhookUrl, type Resolver } from '../src/providers/webhooks/url-policy.js';

type Hit = { method: string; url: string; headers: http.IncomingHttpHeaders; body: string; remoteAddress: string; localAddress: string };

const servers: (http.Server | https.Server)[] = [];
after(async () => {
  for (const s of servers) {
    s.closeAllConnections();
    await new Promise((resolve) => s.close(resolve));
  }
});

/** A real receiver on a loopback address; `respond` decides the answer, every request is recorded. */
async function receiver(
  respond: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  host = '127.0.0.1',
): Promise<{ port: number; hits: Hit[]; origin: string }> {
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (body += c));
    req.on('end', () => {
      hits.push({ method: req.method!, url: req.url!, headers: req.headers, body, remoteAddress: req.socket.remoteAddress!, localAddress: req.socket.localAddress! });
      respond(req, res);
    });
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const port = (server.address() as AddressInfo).port;
  return { port, hits, origin: `http://${host}:${port}` };
}

/** A resolver that records its calls and answers from `answer(callNumber)`. */
function countingResolver(answer: (call: number, host: string) => string[]): Resolver & { calls: string[] } {
  const calls: string[] = [];
  const resolver: Resolver = async (host) => {
    calls.push(host);
    return answer(calls.length, host).map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return Object.assign(resolver, { calls });
}

const base = {
  body: JSON.stringify({ event: 'envelope.sent', deliveredAt: '2025-01-01T00:00:00.000Z', envelope: { envelopeId: 'e1' } }),
  headers: { 'content-type': 'application/json', 'x-service-event': 'envelope.sent', 'x-service-delivery-id': 'dlv_1' },
  timeoutMs: 5_000,
  allowHosts: ['127.0.0.1'],
  ownOrigins: ['http://signet.test'],
};

describe('postWebhook answers', () => {
  test('a 2xx is ok, and the receiver gets the exact body and headers', async () => {
    const r = await receiver((_req, res) => res.writeHead(204).end());
    const result = await postWebhook({ ...base, url: `${r.origin}/esign?tenant=7` });
    assert.equal(result.ok, true);
    assert.equal(result.status, 204);
    assert.equal(result.error, null);
    assert.equal(result.gone, false);
    assert.ok(result.durationMs >= 0 && result.durationMs < 2_000);
    assert.equal(r.hits.length, 1);
    const hit = r.hits[0];
    assert.equal(hit.method, 'POST');
    assert.equal(hit.url, '/esign?tenant=7');
    assert.equal(hit.body, base.body);
    assert.equal(hit.headers.host, `127.0.0.1:${r.port}`);
    assert.equal(hit.headers['content-type'], 'application/json');
    assert.equal(hit.headers['x-service-delivery-id'], 'dlv_1');
    assert.equal(hit.headers['content-length'], String(Buffer.byteLength(base.body)));
    // No keep-alive: each attempt is a fresh, checked connection.
    assert.notEqual(hit.headers.connection, 'keep-alive');
  });

  test('a 500 is not ok, with the status and a one-line extract of the answer', async () => {
    const r = await receiver((_req, res) => res.writeHead(500, { 'content-type': 'text/plain' }).end('invalid\nsignature\u0000 header'));
    const result = await postWebhook({ ...base, url: `${r.origin}/h` });
    assert.deepEqual({ ...result, durationMs: 0 }, { ok: false, status: 500, error: 'HTTP 500: invalid signature header', gone: false, durationMs: 0 });
  });

  test('a 410 is not ok and gone', async () => {
    const r = await receiver((_req, res) => res.writeHead(410).end());
    const result = await postWebhook({ ...base, url: `${r.origin}/h` });
    assert.equal(result.ok, false);
    assert.equal(result.status, 410);
    assert.equal(result.gone, true);
    assert.equal(result.error, 'HTTP 410');
  });

  test('a redirect is never followed, to the metadata address or to an allowed host', async () => {
    const target = await receiver((_req, res) => res.writeHead(200).end('followed'));
    const r = await receiver((req, res) => {
      const location = req.url === '/meta' ? 'http://169.254.169.254/latest/meta-data' : `${target.origin}/stolen`;
      res.writeHead(req.url === '/307' ? 307 : 302, { location }).end();
    });
    for (const path of ['/meta', '/other', '/307']) {
      const result = await postWebhook({ ...base, url: `${r.origin}${path}` });
      const code = path === '/307' ? 307 : 302;
      assert.deepEqual({ ...result, durationMs: 0 }, { ok: false, status: code, error: `redirect not followed (${code})`, gone: false, durationMs: 0 });
    }
    assert.equal(r.hits.length, 3);
    assert.equal(target.hits.length, 0, 'the redirect target must receive nothing');
  });

  test('a receiver that never answers times out', async () => {
    const r = await receiver(() => {});
    const result = await postWebhook({ ...base, url: `${r.origin}/h`, timeoutMs: 300 });
    assert.deepEqual({ ...result, durationMs: 0 }, { ok: false, status: null, error: 'timeout after 300 ms', gone: false, durationMs: 0 });
    assert.ok(result.durationMs >= 290 && result.durationMs < 1_500, `took ${result.durationMs} ms`);
  });

  test('a body that trickles past the deadline times out too', async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const t = setInterval(() => res.write('.'), 50);
      res.on('close', () => clearInterval(t));
    });
    const result = await postWebhook({ ...base, url: `${r.origin}/h`, timeoutMs: 400 });
    assert.equal(result.ok, false);
    assert.equal(result.status, null);
    assert.equal(result.error, 'timeout after 400 ms');
    assert.ok(result.durationMs < 1_500);
  });

  test('a huge answer is cut at 64 KiB and the connection dropped, without waiting for the rest', async () => {
    let written = 0;
    let closedEarly: Promise<boolean> = Promise.resolve(false);
    const total = 10 * 1024 * 1024;
    const r = await receiver((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(total) });
      const chunk = Buffer.alloc(16 * 1024, 0x61);
      // 10 MiB at 16 KiB per 5 ms would take over 3 s to send in full.
      const t = setInterval(() => {
        if (written >= total) return clearInterval(t);
        res.write(chunk);
        written += chunk.length;
      }, 5);
      closedEarly = new Promise((resolve) => res.on('close', () => (clearInterval(t), resolve(written < total))));
    });
    const result = await postWebhook({ ...base, url: `${r.origin}/h`, timeoutMs: 10_000 });
    assert.equal(result.ok, true);
    assert.equal(result.status, 200);
    assert.ok(result.durationMs < 1_500, `took ${result.durationMs} ms`);
    assert.equal(await closedEarly, true, 'the receiver saw the connection closed before it finished');
    assert.ok(written < 1024 * 1024, `only about 64 KiB should have been pulled, the receiver wrote ${written}`);
  });

  test('a custom maxResponseBytes is honoured on error answers too', async () => {
    const r = await receiver((_req, res) => {
      res.writeHead(503);
      res.write('x'.repeat(2048));
      // Never ends: only the cap can finish the read.
    });
    const result = await postWebhook({ ...base, url: `${r.origin}/h`, maxResponseBytes: 1024, timeoutMs: 3_000 });
    assert.equal(result.status, 503);
    assert.equal(result.ok, false);
    assert.match(result.error!, /^HTTP 503: x{200}…$/);
    assert.ok(result.durationMs < 2_000);
  });

  test('connection errors are short messages', async () => {
    const r = await receiver(() => {});
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const refused = await postWebhook({ ...base, url: `http://127.0.0.1:${port}/h` });
    assert.deepEqual({ ...refused, durationMs: 0 }, { ok: false, status: null, error: 'connection refused', gone: false, durationMs: 0 });

    const tlsToPlain = await postWebhook({ ...base, url: `https://127.0.0.1:${r.port}/h`, timeoutMs: 2_000 });
    assert.deepEqual({ ...tlsToPlain, durationMs: 0 }, { ok: false, status: null, error: 'tls: the receiver does not speak TLS on this port', gone: false, durationMs: 0 });
  });
});

describe('postWebhook policy', () => {
  test('refusals are results, not exceptions, and nothing is sent', async () => {
    for (const url of ['http://169.254.169.254/latest/meta-data', 'http://0x7f000001/', 'http://[::ffff:127.0.0.1]/', 'ftp://example.com/', 'http://u:p@example.com/', 'http://signet.test/x', 'nonsense']) {
      const result = await postWebhook({ ...base, url, allowHosts: [] });
      assert.equal(result.ok, false, url);
      assert.equal(result.status, null, url);
      assert.match(result.error!, /^refused: /, url);
    }
  });

  test('the address is checked again at send time: public at registration, private at send is refused', async () => {
    const dns = countingResolver((call) => (call === 1 ? ['93.184.216.34'] : ['10.0.0.5']));
    const policy = { allowHosts: [] as string[], ownOrigins: base.ownOrigins, resolver: dns };
    const { url } = parseWebhookUrl('https://rebind.example.com/hook', policy);
    assert.deepEqual(await checkResolvable(url, policy), { address: '93.184.216.34', family: 4 });

    const result = await postWebhook({ ...base, ...policy, url: url.href });
    assert.equal(result.ok, false);
    assert.equal(result.status, null);
    assert.match(result.error!, /^refused: .*resolves to 10\.0\.0\.5/);
    assert.equal(dns.calls.length, 2);
  });

  test('DNS is asked once per send and the connection goes to the address it answered', async () => {
    // The receiver listens on 127.0.0.2 only; 'hooks.test' does not exist in real DNS, and any later
    // answer points elsewhere, so only a connection pinned to the first answer can reach it.
    const r = await receiver((_req, res) => res.writeHead(200).end(), '127.0.0.2');
    const dns = countingResolver((call) => (call === 1 ? ['127.0.0.2'] : ['127.0.0.3']));
    const result = await postWebhook({ ...base, url: `http://hooks.test:${r.port}/h`, allowHosts: ['hooks.test'], resolver: dns });
    assert.equal(result.error, null);
    assert.equal(result.ok, true);
    assert.deepEqual(dns.calls, ['hooks.test']);
    assert.equal(r.hits.length, 1);
    assert.equal(r.hits[0].headers.host, `hooks.test:${r.port}`);
    assert.equal(r.hits[0].localAddress, '127.0.0.2');

    const again = await postWebhook({ ...base, url: `http://hooks.test:${r.port}/h`, allowHosts: ['hooks.test'], resolver: dns });
    assert.equal(again.error, 'connection refused', 'the second send used the second answer, 127.0.0.3');
    assert.equal(dns.calls.length, 2);
  });

  test('a name without DNS answers fails as a DNS error, not a refusal', async () => {
    const dns: Resolver = async () => {
      throw Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example.com'), { code: 'ENOTFOUND' });
    };
    const result = await postWebhook({ ...base, url: 'https://nowhere.example.com/', resolver: dns });
    assert.equal(result.ok, false);
    assert.equal(result.status, null);
    assert.match(result.error!, /^dns: .*ENOTFOUND/);
  });

  test('TLS goes to the pinned address with the host name as SNI, and the certificate is verified', async () => {
    const { key, cert } = selfSigned('hooks.test');
    const servernames: string[] = [];
    let requests = 0;
    const server = https.createServer(
      {
        key,
        cert,
        SNICallback: (name, cb) => {
          servernames.push(name);
          cb(null, undefined);
        },
      },
      (_req, res) => {
        requests++;
        res.writeHead(200).end();
      },
    );
    servers.push(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.2', resolve));
    const port = (server.address() as AddressInfo).port;
    const dns = countingResolver(() => ['127.0.0.2']);
    const result = await postWebhook({ ...base, url: `https://hooks.test:${port}/h`, allowHosts: ['hooks.test'], resolver: dns });
    assert.deepEqual(servernames, ['hooks.test']);
    assert.equal(dns.calls.length, 1);
    // A self-signed certificate is not trusted: the request never reaches the handler.
    assert.equal(result.ok, false);
    assert.equal(result.status, null);
    assert.match(result.error!, /^tls: (DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)$/);
    assert.equal(requests, 0);
  });
});

/** A throwaway self-signed certificate for `name` (node-forge signs it; Node makes the key quickly). */
function selfSigned(name: string): { key: string; cert: string } {
  const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  const keyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const c = forge.pki.createCertificate();
  c.publicKey = forge.pki.publicKeyFromPem(publicKey.export({ type: 'spki', format: 'pem' }).toString());
  c.serialNumber = '01';
  c.validity.notBefore = new Date(Date.now() - 60_000);
  c.validity.notAfter = new Date(Date.now() + 3_600_000);
  const attrs = [{ name: 'commonName', value: name }];
  c.setSubject(attrs);
  c.setIssuer(attrs);
  c.setExtensions([{ name: 'subjectAltName', altNames: [{ type: 2, value: name }] }]);
  c.sign(forge.pki.privateKeyFromPem(keyPem), forge.md.sha256.create());
  return { key: keyPem, cert: forge.pki.certificateToPem(c) };
}
