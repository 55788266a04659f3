/**
 * Who the client is behind a proxy (issue 32, item 8): TRUST_PROXY names the proxies (or counts the
 * hops) whose X-Forwarded-For is believed; the shipped deploy/nginx.conf replaces the header with the
 * address that connected to it, so a client cannot write its own address onto the sealed audit
 * certificate or around a per-IP limit; and an IPv6 client counts as its /64 in every per-IP limit
 * (the rate limit, verify-document's anonymous budget, failed authentication, sign-in links, OpenID
 * Connect starts). Real nginx (Debian's, as the cluster test runs it) and a real OpenID provider.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eq } from 'drizzle-orm';
// @ts-expect-error oidc-provider ships no type declarations (and @types/oidc-provider is no dependency of ours)
import Provider from 'oidc-provider';
import { engineEvents, engineRecipients } from '../src/db/schema/index.js';
import { ipBucket } from '../src/http/client-address.js';
import { NGINX, NGINX_TEMPLATE, nginxConfig } from './cluster/cluster.js';
import { freePort, spawnLogged, tail, waitForPort } from './cluster/processes.js';
import { createEnvelope, person, recipientToken } from './fixtures/envelopes.js';
import { bearer, createTestApp, type TestApp } from './harness.js';

/** The address a request was taken to come from, as the app sees it (a probe route added to the real app). */
async function probeApp(trustProxy: string): Promise<TestApp> {
  return createTestApp({
    env: { TRUST_PROXY: trustProxy },
    beforeReady: (app) => void app.get('/probe/client', { config: { rateLimit: false } }, async (request) => ({ ip: request.ip, protocol: request.protocol })),
  });
}
const probe = async (t: TestApp, remoteAddress: string, headers: Record<string, string>) => (await t.app.inject({ url: '/probe/client', remoteAddress, headers })).json() as { ip: string; protocol: string };

describe('TRUST_PROXY: whose X-Forwarded-For is believed', () => {
  test("the proxies' addresses: only a listed proxy's header counts, and only its own entry", async () => {
    const t = await probeApp('10.0.0.5,fd00::/8');
    try {
      const forged = { 'x-forwarded-for': '203.0.113.66, 198.51.100.7', 'x-forwarded-proto': 'https' };
      assert.deepEqual(await probe(t, '10.0.0.5', forged), { ip: '198.51.100.7', protocol: 'https' });
      assert.deepEqual(await probe(t, 'fd00::1', forged), { ip: '198.51.100.7', protocol: 'https' });
      // A client that reaches the node directly is not a proxy: its headers are its own words.
      assert.deepEqual(await probe(t, '192.0.2.10', forged), { ip: '192.0.2.10', protocol: 'http' });
    } finally {
      await t.close();
    }
  });

  test('a hop count: the nearest hops whatever their address', async () => {
    const t = await probeApp('1');
    try {
      assert.equal((await probe(t, '10.9.9.9', { 'x-forwarded-for': '203.0.113.66, 198.51.100.7' })).ip, '198.51.100.7');
      assert.equal((await probe(t, '10.9.9.9', {})).ip, '10.9.9.9');
    } finally {
      await t.close();
    }
  });
});

describe('behind the shipped deploy/nginx.conf, the client cannot choose its address', () => {
  let t: TestApp;
  let base: string;
  let prefix: string;
  let nginx: ReturnType<typeof spawnLogged> | undefined;

  before(async () => {
    // TRUST_PROXY as README's cluster setup says: the address nginx reaches the node from.
    t = await createTestApp({ env: { TRUST_PROXY: '127.0.0.1' } });
    await t.app.listen({ host: '127.0.0.1', port: 0 });
    const nodePort = (t.app.server.address() as AddressInfo).port;
    prefix = mkdtempSync(path.join(tmpdir(), 'signet-nginx-'));
    for (const d of ['logs', 'temp']) mkdirSync(path.join(prefix, d));
    const port = await freePort();
    const conf = path.join(prefix, 'nginx.conf');
    writeFileSync(conf, nginxConfig(readFileSync(NGINX_TEMPLATE, 'utf8'), port, [nodePort]));
    const errorLog = path.join(prefix, 'logs', 'error.log');
    nginx = spawnLogged(NGINX, ['-p', prefix, '-c', conf, '-e', errorLog], process.env, path.join(prefix, 'nginx.out'));
    const child = nginx.child;
    await waitForPort(port, 30_000, `nginx (${tail(errorLog)})`, () => child.exitCode !== null);
    base = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    nginx?.child.kill('SIGTERM');
    await nginx?.exited;
    await t?.close();
    if (prefix) rmSync(prefix, { recursive: true, force: true });
  });

  test("a forged X-Forwarded-For does not reach the signer's audit record (the sealed certificate's IP)", async () => {
    const signer = person('xff');
    const env = await createEnvelope(t, { title: 'XFF', recipients: [signer] });
    const res = await fetch(`${base}/sign/${recipientToken(env, signer.email)}/session`, { headers: { 'x-forwarded-for': '203.0.113.66, 198.51.100.7' } });
    assert.equal(res.status, 200, await res.text());
    const [recipient] = await t.container.db.select().from(engineRecipients).where(eq(engineRecipients.email, signer.email));
    assert.equal(recipient.ip, '127.0.0.1');
    const viewed = await t.container.db.select().from(engineEvents).where(eq(engineEvents.recipientId, recipient.id));
    assert.deepEqual(viewed.map((e) => [e.event, e.ip]), [['VIEWED', '127.0.0.1']]);
  });

  test('25 sign-in links, each with a new X-Forwarded-For: the 21st is refused (20 per IP an hour)', async () => {
    const page = await fetch(`${base}/dashboard/sign-in`);
    assert.equal(page.status, 200);
    const cookie = page.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())?.[1];
    assert.ok(csrf, 'the sign-in form carries a CSRF token');
    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) {
      const res = await fetch(`${base}/dashboard/sign-in/email`, {
        method: 'POST',
        headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': `198.51.100.${i + 1}` },
        body: new URLSearchParams({ _csrf: csrf, email: `xff-${randomBytes(4).toString('hex')}@example.com` }),
      });
      await res.arrayBuffer();
      statuses.push(res.status);
    }
    assert.deepEqual(statuses, [...Array<number>(20).fill(200), ...Array<number>(5).fill(429)]);
  });
});

describe('an IPv6 client counts as its /64 in every per-IP limit', () => {
  // Two addresses of one /64 look unrelated; a third is in the next /64.
  const a = '2001:db8:7:1::1';
  const b = '2001:db8:7:1:8a2e:370:7334:9';
  const otherNetwork = '2001:db8:7:2::1';

  test('ipBucket: IPv4 as it is, IPv6 as its /64, IPv4-mapped IPv6 as its IPv4 address', () => {
    assert.equal(ipBucket('203.0.113.9'), '203.0.113.9');
    assert.equal(ipBucket('::ffff:203.0.113.9'), '203.0.113.9');
    assert.equal(ipBucket(a), '2001:db8:7:1::/64');
    assert.equal(ipBucket(b), '2001:db8:7:1::/64');
    assert.equal(ipBucket('2001:DB8:7:1:0:0:0:2'), '2001:db8:7:1::/64');
    assert.equal(ipBucket('fe80::1%eth0'), 'fe80:0:0:0::/64');
    assert.equal(ipBucket('::1'), '0:0:0:0::/64');
    assert.equal(ipBucket(otherNetwork), '2001:db8:7:2::/64');
  });

  describe('with small limits', () => {
    let t: TestApp;
    before(async () => {
      t = await createTestApp({ env: { RATE_LIMIT_MAX: '3', VERIFY_DOCUMENT_RATE_LIMIT: '2', AUTH_FAILURE_LIMIT: '2' } });
    });
    after(() => t?.close());

    test('the rate limit of anonymous routes', async () => {
      const call = (remoteAddress: string) => t.app.inject({ url: `/sign/${'x'.repeat(43)}/session`, remoteAddress });
      for (const ip of [a, b, a]) assert.notEqual((await call(ip)).statusCode, 429);
      assert.equal((await call(b)).statusCode, 429);
      assert.notEqual((await call(otherNetwork)).statusCode, 429);
    });

    test("verify-document's anonymous budget", async () => {
      const call = (remoteAddress: string) =>
        t.app.inject({ method: 'POST', url: '/v1/documents/verify', remoteAddress, headers: { 'content-type': 'application/pdf' }, payload: Buffer.from('%PDF-1.7\n') });
      for (const ip of ['2001:db8:8:1::1', '2001:db8:8:1::2']) assert.notEqual((await call(ip)).statusCode, 429);
      assert.equal((await call('2001:db8:8:1::3')).statusCode, 429);
      assert.notEqual((await call('2001:db8:8:2::1')).statusCode, 429);
    });

    test('the failed-authentication lockout', async () => {
      const account = (remoteAddress: string, key: string) => t.app.inject({ url: '/v1/account', remoteAddress, headers: bearer(key) });
      const unknownKey = () => `svc_live_${randomBytes(16).toString('hex')}`;
      assert.equal((await account('2001:db8:9:1:1::1', unknownKey())).statusCode, 401);
      assert.equal((await account('2001:db8:9:1:2::1', unknownKey())).statusCode, 401);
      // Even a valid key, from yet another address of that /64.
      const locked = await account('2001:db8:9:1:3::1', t.customer.apiKey);
      assert.equal(locked.statusCode, 429);
      assert.match(locked.json().error, /Too many failed authentications/);
      assert.equal((await account('2001:db8:9:2::1', t.customer.apiKey)).statusCode, 200);
    });
  });

  test('sign-in links: 20 an hour per /64', async () => {
    const t = await createTestApp();
    try {
      const page = await t.app.inject({ url: '/dashboard/sign-in', remoteAddress: a });
      const cookie = page.cookies.map((c) => `${c.name}=${c.value}`).join('; ');
      const csrf = /name="_csrf" value="([^"]+)"/.exec(page.body)![1];
      const ask = (remoteAddress: string) =>
        t.app.inject({
          method: 'POST',
          url: '/dashboard/sign-in/email',
          remoteAddress,
          headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
          payload: new URLSearchParams({ _csrf: csrf, email: `v6-${randomBytes(4).toString('hex')}@example.com` }).toString(),
        });
      const statuses: number[] = [];
      for (let i = 1; i <= 21; i++) statuses.push((await ask(`2001:db8:a:1::${i.toString(16)}`)).statusCode);
      assert.deepEqual(statuses, [...Array<number>(20).fill(200), 429]);
      assert.equal((await ask('2001:db8:a:2::1')).statusCode, 200);
    } finally {
      await t.close();
    }
  });

  test('OpenID Connect starts: 60 an hour per /64', async () => {
    const idp: Server = createServer();
    await new Promise<void>((resolve) => idp.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
    const client = { client_id: 'signet', client_secret: 'a-client-secret-for-tests-only-0123456789' };
    const provider = new Provider(issuer, {
      clients: [{ ...client, redirect_uris: ['http://signet.test/dashboard/auth/callback'], grant_types: ['authorization_code'], response_types: ['code'] }],
      cookies: { keys: ['a-cookie-key-for-tests-only'] },
    });
    idp.on('request', provider.callback());
    const t = await createTestApp({ env: { OIDC_ISSUER: issuer, OIDC_CLIENT_ID: client.client_id, OIDC_CLIENT_SECRET: client.client_secret } });
    try {
      const start = async (remoteAddress: string) => (await t.app.inject({ url: '/dashboard/sign-in/oidc', remoteAddress })).statusCode;
      const statuses: number[] = [];
      for (let i = 1; i <= 61; i++) statuses.push(await start(`2001:db8:b:1:${i.toString(16)}::1`));
      assert.deepEqual(statuses, [...Array<number>(60).fill(303), 429]);
      assert.equal(await start('2001:db8:b:2::1'), 303);
    } finally {
      await t.close();
      await new Promise((resolve) => idp.close(resolve));
    }
  });
});
