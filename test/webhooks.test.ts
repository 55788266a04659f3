/**
 * Webhook registrations: validation and every error code, the URL policy at registration, the secret
 * shown once, ownership and test/live separation, PUT re-activation, DELETE keeping history and stopping
 * pending deliveries, and which events reach which registration.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import type { ResolvedAddress, Resolver } from '../src/providers/webhooks/url-policy.js';
import { OPS_TOKEN, bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { assertError, createEnvelope, person, openAs, recipientToken, signAs } from './fixtures/envelopes.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
const ALL_EVENTS = ['envelope.sent', 'envelope.viewed', 'envelope.signed', 'envelope.completed', 'envelope.rejected', 'envelope.expired', 'envelope.cancelled'];

/** Injected DNS: names the tests use, each with the answer a real resolver could give. */
const PUBLIC4 = '93.184.216.34';
const DNS: Record<string, ResolvedAddress[]> = {
  'hooks.example.com': [{ address: PUBLIC4, family: 4 }],
  // Resolves to a public address, so refusing it can only be the own-origin rule.
  'signet.test': [{ address: PUBLIC4, family: 4 }],
  'private.example.com': [{ address: '10.0.0.5', family: 4 }],
  'mixed.example.com': [
    { address: PUBLIC4, family: 4 },
    { address: '192.168.1.10', family: 4 },
  ],
  'ula.example.com': [{ address: 'fd00::1', family: 6 }],
  'metadata.example.com': [{ address: '169.254.169.254', family: 4 }],
  'mapped.example.com': [{ address: '::ffff:127.0.0.1', family: 6 }],
  'cgnat.example.com': [{ address: '100.64.1.1', family: 4 }],
  localhost: [{ address: '127.0.0.1', family: 4 }],
};
const asked: string[] = [];
const resolver: Resolver = async (host) => {
  asked.push(host.toLowerCase());
  const answer = DNS[host.toLowerCase()];
  if (!answer) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return answer;
};

let t: TestApp; // WEBHOOK_ALLOW_HOSTS=127.0.0.1, for local receivers
let strict: TestApp; // no exemptions: the URL policy as production applies it
const receivers: Receiver[] = [];

before(async () => {
  // A scheduler tick far away: deliveries run on the NOTIFY wake-up, retries when `until` wakes the worker.
  t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', SCHEDULER_INTERVAL_MS: '60000' }, overrides: { webhookResolver: resolver } });
  strict = await createTestApp({ overrides: { webhookResolver: resolver } });
  await t.container.worker.start();
});
after(async () => {
  await t?.close();
  await strict?.close();
  await Promise.all(receivers.map((r) => r.close()));
});

async function receiver(...args: Parameters<typeof startReceiver>): Promise<Receiver> {
  const r = await startReceiver(...args);
  receivers.push(r);
  return r;
}

type Json = Record<string, unknown>;
const json = { 'content-type': 'application/json' };

const post = (app: TestApp, body: unknown, apiKey = app.customer.apiKey) =>
  app.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...bearer(apiKey), ...json }, payload: JSON.stringify(body) });
const get = (app: TestApp, id: string, apiKey = app.customer.apiKey) => app.app.inject({ url: `/v1/webhooks/${id}`, headers: bearer(apiKey) });
const list = (app: TestApp, apiKey = app.customer.apiKey, q = '') => app.app.inject({ url: `/v1/webhooks${q}`, headers: bearer(apiKey) });
const put = (app: TestApp, id: string, body: unknown, apiKey = app.customer.apiKey) =>
  app.app.inject({ method: 'PUT', url: `/v1/webhooks/${id}`, headers: { ...bearer(apiKey), ...json }, payload: JSON.stringify(body) });
const del = (app: TestApp, id: string, apiKey = app.customer.apiKey, q = '') => app.app.inject({ method: 'DELETE', url: `/v1/webhooks/${id}${q}`, headers: bearer(apiKey) });
const deliveries = (app: TestApp, id: string, apiKey = app.customer.apiKey, q = '') => app.app.inject({ url: `/v1/webhooks/${id}/deliveries${q}`, headers: bearer(apiKey) });

/** Registers and asserts 201; returns the body (with its secret). */
async function register(app: TestApp, body: Json, apiKey = app.customer.apiKey): Promise<Json & { id: string; webhookId: string; secret: string }> {
  const res = await post(app, body, apiKey);
  assert.equal(res.statusCode, 201, res.body);
  return res.json();
}

async function deliveriesOf(id: string, apiKey: string, q = ''): Promise<{ data: Json[]; total: number }> {
  const res = await deliveries(t, id, apiKey, q);
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
}

/** Keeps the worker going (waking it, so retries due run without the scheduler tick) until `check` holds. */
async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs = 120_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    t.container.worker.wake();
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

describe('registration', () => {
  test('201 returns SPEC shape, both id forms and a whsec_ secret; later reads never show the secret', async () => {
    const r = await receiver();
    const created = await register(t, { url: r.url(), events: ['envelope.sent', 'envelope.completed'], description: 'CRM sync' });
    assert.match(created.id, UUID);
    assert.equal(created.webhookId, `wh_${created.id}`);
    assert.equal(created.url, r.url());
    assert.deepEqual(created.events, ['envelope.sent', 'envelope.completed']);
    assert.equal(created.description, 'CRM sync');
    assert.equal(created.active, true);
    assert.equal(created.consecutiveFailures, 0);
    assert.equal(created.format, 'standard');
    assert.match(created.secret, /^whsec_[0-9a-f]{32}$/);
    assert.match(String(created.createdAt), ISO);
    assert.match(String(created.updatedAt), ISO);

    const other = await register(t, { url: r.url(), events: ['*'] });
    assert.notEqual(other.secret, created.secret, 'every registration gets its own secret');
    assert.equal(other.description, null);

    // Never again: not by either id form, not in the list, not in a PUT answer, not in the audit trail.
    for (const id of [created.id, created.webhookId, created.webhookId.toUpperCase().replace('WH_', 'wh_')]) {
      const res = await get(t, id);
      assert.equal(res.statusCode, 200, `${id}: ${res.body}`);
      assert.equal(res.json().id, created.id);
      assert.equal('secret' in res.json(), false);
      assert.ok(!res.body.includes(created.secret));
    }
    const all = await list(t);
    assert.equal(all.statusCode, 200);
    assert.ok(all.json().data.some((w: Json) => w.id === created.id));
    assert.ok(all.json().data.every((w: Json) => !('secret' in w)));
    assert.ok(!all.body.includes(created.secret) && !all.body.includes(other.secret));
    const updated = await put(t, created.webhookId, { description: 'renamed' });
    assert.equal(updated.statusCode, 200, updated.body);
    assert.equal(updated.json().description, 'renamed');
    assert.equal('secret' in updated.json(), false);
    const audit = await t.app.inject({ url: `/ops/audit?customerId=${t.customer.id}&limit=100`, headers: bearer(OPS_TOKEN) });
    assert.equal(audit.statusCode, 200, audit.body);
    assert.ok(audit.body.includes(created.id), 'the registration is audited');
    assert.ok(!audit.body.includes(created.secret), 'the audit trail does not keep the secret');
  });

  test("a caller's own secret of at least 24 characters is used as given", async () => {
    const r = await receiver();
    const secret = 'my-own-secret-0123456789';
    const created = await register(t, { url: r.url(), events: ['*'], secret });
    assert.equal(created.secret, secret);
    assert.equal('secret' in (await get(t, created.id)).json(), false);
  });

  test('every event name and ["*"] are accepted; duplicates collapse', async () => {
    const r = await receiver();
    assert.deepEqual((await register(t, { url: r.url(), events: ALL_EVENTS })).events, ALL_EVENTS);
    assert.deepEqual((await register(t, { url: r.url(), events: ['*'] })).events, ['*']);
    assert.deepEqual((await register(t, { url: r.url(), events: ['envelope.sent', 'envelope.sent'] })).events, ['envelope.sent']);
    assert.equal((await register(t, { url: r.url(), events: ['*'], format: 'alt' })).format, 'alt');
  });

  test('VALIDATION_ERROR names the field for bad events, "*" mixed with names, short secrets and other bad input', async () => {
    const r = await receiver();
    const url = r.url();
    const cases: [string, unknown, string][] = [
      ['no url', { events: ['*'] }, 'url'],
      ['url not a string', { url: 42, events: ['*'] }, 'url'],
      ['no events', { url }, 'events'],
      ['events empty', { url, events: [] }, 'events'],
      ['events a string', { url, events: 'envelope.sent' }, 'events'],
      ['unknown event', { url, events: ['envelope.exploded'] }, 'events.0'],
      ['unknown event after a good one', { url, events: ['envelope.sent', 'document.sent'] }, 'events.1'],
      ['V1 names only, case-sensitive', { url, events: ['ENVELOPE.SENT'] }, 'events.0'],
      ['* mixed with a name', { url, events: ['*', 'envelope.sent'] }, 'events'],
      ['* after a name', { url, events: ['envelope.sent', '*'] }, 'events'],
      ['short secret', { url, events: ['*'], secret: 'whsec_short' }, 'secret'],
      ['23-character secret', { url, events: ['*'], secret: 'a'.repeat(23) }, 'secret'],
      ['unknown format', { url, events: ['*'], format: 'xml' }, 'format'],
      ['description too long', { url, events: ['*'], description: 'd'.repeat(501) }, 'description'],
    ];
    const before = (await list(t, t.customer.apiKey, '?limit=100')).json().total;
    for (const [name, body, path] of cases) {
      const err = assertError(await post(t, body), 400, 'VALIDATION_ERROR');
      assert.ok(Array.isArray(err.details), `${name}: ${JSON.stringify(err)}`);
      assert.ok(
        err.details.some((d: { path: string }) => d.path === `body.${path}`),
        `${name}: details should name body.${path}: ${JSON.stringify(err.details)}`,
      );
    }
    assert.equal((await list(t, t.customer.apiKey, '?limit=100')).json().total, before, 'nothing was registered');
    // The boundary: 24 characters is enough.
    assert.equal((await post(t, { url, events: ['*'], secret: 'a'.repeat(24) })).statusCode, 201);

    const w = await register(t, { url, events: ['*'] });
    for (const [name, body] of [
      ['empty PUT', {}],
      ['unknown event', { events: ['envelope.nope'] }],
      ['* mixed', { events: ['*', 'envelope.viewed'] }],
      ['active not boolean', { active: 'yes' }],
      ['format', { format: 'soap' }],
    ] as const) {
      const res = await put(t, w.id, body);
      assert.equal(res.json().code, 'VALIDATION_ERROR', `${name}: ${res.body}`);
      assert.equal(res.statusCode, 400, name);
    }
    for (const q of ['?status=DONE', '?limit=0', '?limit=101', '?offset=-1', '?perPage=101']) assertError(await deliveries(t, w.id, t.customer.apiKey, q), 400, 'VALIDATION_ERROR');
    assert.deepEqual((await get(t, w.id)).json().events, ['*'], 'a refused PUT changed nothing');
  });

  test('WEBHOOK_NOT_FOUND for unknown, malformed and deleted ids on every route', async () => {
    const r = await receiver();
    const w = await register(t, { url: r.url(), events: ['*'] });
    assert.equal((await del(t, w.id)).statusCode, 204);
    const ids = ['00000000-0000-4000-8000-000000000000', 'wh_00000000-0000-4000-8000-000000000000', 'not-a-uuid', 'wh_', 'wh_xyz', w.id, w.webhookId];
    for (const id of ids) {
      assertError(await get(t, id), 404, 'WEBHOOK_NOT_FOUND');
      assertError(await put(t, id, { active: true }), 404, 'WEBHOOK_NOT_FOUND');
      assertError(await del(t, id), 404, 'WEBHOOK_NOT_FOUND');
      assertError(await deliveries(t, id, t.customer.apiKey), 404, 'WEBHOOK_NOT_FOUND');
    }
    assert.ok(!(await list(t, t.customer.apiKey, '?limit=100')).json().data.some((x: Json) => x.id === w.id), 'a deleted registration is not listed');
  });

  test("another customer's webhook is 404 on every route and stays untouched", async () => {
    const r = await receiver();
    const owner = await t.createCustomer(0);
    const stranger = await t.createCustomer(0);
    const w = await register(t, { url: r.url(), events: ['envelope.sent'], description: 'mine' }, owner.apiKey);
    for (const id of [w.id, w.webhookId]) {
      assertError(await get(t, id, stranger.apiKey), 404, 'WEBHOOK_NOT_FOUND');
      assertError(await put(t, id, { active: false, description: 'theirs', events: ['*'] }, stranger.apiKey), 404, 'WEBHOOK_NOT_FOUND');
      assertError(await del(t, id, stranger.apiKey), 404, 'WEBHOOK_NOT_FOUND');
      assertError(await deliveries(t, id, stranger.apiKey), 404, 'WEBHOOK_NOT_FOUND');
    }
    assert.equal((await list(t, stranger.apiKey)).json().total, 0);
    const mine = (await get(t, w.id, owner.apiKey)).json();
    assert.equal(mine.active, true);
    assert.equal(mine.description, 'mine');
    assert.deepEqual(mine.events, ['envelope.sent']);
  });

  test('test-key and live-key registrations are separate', async () => {
    const r = await receiver();
    const c = await t.createCustomer(0);
    const live = await register(t, { url: r.url(), events: ['*'] }, c.apiKey);
    const testMode = await register(t, { url: r.url(), events: ['*'] }, c.testApiKey);
    assertError(await get(t, live.id, c.testApiKey), 404, 'WEBHOOK_NOT_FOUND');
    assertError(await get(t, testMode.id, c.apiKey), 404, 'WEBHOOK_NOT_FOUND');
    assertError(await del(t, testMode.id, c.apiKey), 404, 'WEBHOOK_NOT_FOUND');
    assertError(await deliveries(t, live.id, c.testApiKey), 404, 'WEBHOOK_NOT_FOUND');
    assert.deepEqual((await list(t, c.apiKey)).json().data.map((w: Json) => w.id), [live.id]);
    assert.deepEqual((await list(t, c.testApiKey)).json().data.map((w: Json) => w.id), [testMode.id]);
  });

  test('lists page with limit/offset and with page/perPage', async () => {
    const r = await receiver();
    const c = await t.createCustomer(0);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await register(t, { url: r.url(), events: ['*'], description: `n${i}` }, c.apiKey)).id);
    const first = (await list(t, c.apiKey, '?limit=2')).json();
    assert.equal(first.total, 3);
    assert.equal(first.limit, 2);
    assert.equal(first.offset, 0);
    assert.equal(first.data.length, 2);
    const rest = (await list(t, c.apiKey, '?limit=2&offset=2')).json();
    assert.equal(rest.data.length, 1);
    assert.deepEqual([...first.data, ...rest.data].map((w: Json) => w.id).sort(), [...ids].sort());
    const alt = (await list(t, c.apiKey, '?page=2&perPage=2')).json();
    assert.deepEqual({ total: alt.total, page: alt.page, perPage: alt.perPage, n: alt.data.length }, { total: 3, page: 2, perPage: 2, n: 1 });
  });
});

describe('URL policy at registration', () => {
  // [url, why it is refused]
  const REFUSED: [string, string][] = [
    ['not a url', 'malformed'],
    ['hooks.example.com/esign', 'no scheme'],
    ['ftp://hooks.example.com/esign', 'not http(s)'],
    ['file:///etc/passwd', 'not http(s)'],
    ['javascript:alert(1)', 'not http(s)'],
    ['https://user:pass@hooks.example.com/esign', 'credentials'],
    ['https://user@hooks.example.com/esign', 'a user name'],
    ['https://:pass@hooks.example.com/esign', 'a password'],
    ['http://127.0.0.1/hook', 'loopback'],
    ['http://127.8.9.10:8080/hook', 'loopback /8'],
    ['http://localhost/hook', 'loopback by name'],
    ['http://[::1]/hook', 'IPv6 loopback'],
    ['http://0.0.0.0/hook', '0.0.0.0'],
    ['http://0.1.2.3/hook', '0.0.0.0/8'],
    ['http://[::]/hook', 'IPv6 unspecified'],
    ['http://10.0.0.1/hook', 'RFC 1918 10/8'],
    ['http://172.16.0.1/hook', 'RFC 1918 172.16/12'],
    ['http://172.31.255.254/hook', 'RFC 1918 172.16/12, top'],
    ['http://192.168.0.1/hook', 'RFC 1918 192.168/16'],
    ['http://100.64.0.1/hook', 'CGNAT 100.64/10'],
    ['http://100.127.255.254/hook', 'CGNAT 100.64/10, top'],
    ['http://169.254.169.254/latest/meta-data/', 'cloud metadata'],
    ['http://169.254.0.1/hook', 'link-local 169.254/16'],
    ['http://[fe80::1]/hook', 'IPv6 link-local'],
    ['http://[febf:ffff::1]/hook', 'IPv6 link-local fe80::/10, top'],
    ['http://[fc00::1]/hook', 'ULA fc00::/7'],
    ['http://[fd12:3456:789a::1]/hook', 'ULA fd00::/8'],
    ['http://224.0.0.1/hook', 'IPv4 multicast'],
    ['http://239.255.255.250/hook', 'IPv4 multicast, top'],
    ['http://[ff02::1]/hook', 'IPv6 multicast'],
    ['http://255.255.255.255/hook', 'broadcast'],
    ['http://[::ffff:127.0.0.1]/hook', 'IPv4-mapped loopback'],
    ['http://[::ffff:a9fe:a9fe]/hook', 'IPv4-mapped 169.254.169.254, hex'],
    ['http://[::ffff:10.0.0.1]/hook', 'IPv4-mapped RFC 1918'],
    ['http://[::127.0.0.1]/hook', 'IPv4-compatible loopback'],
    ['http://[::a9fe:a9fe]/hook', 'IPv4-compatible 169.254.169.254'],
    ['http://[::ffff:0:a9fe:a9fe]/hook', 'IPv4-translated (SIIT) 169.254.169.254'],
    ['http://[64:ff9b::a9fe:a9fe]/hook', 'NAT64 of 169.254.169.254'],
    ['http://[64:ff9b::10.0.0.1]/hook', 'NAT64 of 10.0.0.1'],
    ['http://[2002:a9fe:a9fe::1]/hook', '6to4 of 169.254.169.254'],
    ['http://[2002:7f00:1::1]/hook', '6to4 of 127.0.0.1'],
    ['http://2130706433/hook', 'decimal 127.0.0.1'],
    ['http://2852039166/hook', 'decimal 169.254.169.254'],
    ['http://0x7f000001/hook', 'hex 127.0.0.1'],
    ['http://0xA9FEA9FE/hook', 'hex 169.254.169.254'],
    ['http://0xa9.0xfe.0xa9.0xfe/hook', 'dotted hex 169.254.169.254'],
    ['http://0177.0.0.1/hook', 'octal 127.0.0.1'],
    ['http://0251.0376.0251.0376/hook', 'octal 169.254.169.254'],
    ['http://012.0.0.1/hook', 'octal 10.0.0.1'],
    ['http://127.1/hook', 'short form 127.0.0.1'],
    ['http://10.1/hook', 'short form 10.0.0.1'],
    ['http://169.254.43518/hook', '169.254.169.254 with a 16-bit tail'],
    ['http://private.example.com/hook', 'a hostname that resolves to 10.0.0.5'],
    ['http://mixed.example.com/hook', 'a hostname with one private address among public ones'],
    ['http://ula.example.com/hook', 'a hostname that resolves to a ULA'],
    ['http://metadata.example.com/hook', 'a hostname that resolves to 169.254.169.254'],
    ['http://mapped.example.com/hook', 'a hostname that resolves to ::ffff:127.0.0.1'],
    ['http://cgnat.example.com/hook', 'a hostname that resolves into CGNAT'],
    ['http://signet.test/hooks', "the service's own origin"],
    ['http://SIGNET.test:80/other/path', "the service's own origin, spelled differently"],
  ];

  test('every refused form answers 400 INVALID_WEBHOOK_URL and registers nothing', async () => {
    const failures: string[] = [];
    for (const [url, why] of REFUSED) {
      const res = await post(strict, { url, events: ['*'] });
      const body = res.json();
      if (res.statusCode !== 400 || body.code !== 'INVALID_WEBHOOK_URL' || typeof body.error !== 'string') failures.push(`${url} (${why}): ${res.statusCode} ${res.body}`);
    }
    assert.deepEqual(failures, []);
    assert.equal((await list(strict)).json().total, 0);
    // The hostname cases were refused on what the resolver answered, not on the name.
    for (const host of ['private.example.com', 'mixed.example.com', 'metadata.example.com']) assert.ok(asked.includes(host), `${host} was resolved`);
  });

  test('public addresses, including ones just outside the refused ranges, are accepted', async () => {
    const accepted = [
      'https://hooks.example.com/esign',
      'http://93.184.216.34:8080/hook?x=1',
      'https://[2606:4700:4700::1111]/hook',
      'http://172.32.0.1/hook',
      'http://100.128.0.1/hook',
      'http://11.0.0.1/hook',
      'http://169.255.0.1/hook',
      'http://223.255.255.254/hook',
    ];
    for (const url of accepted) {
      const res = await post(strict, { url, events: ['*'] });
      assert.equal(res.statusCode, 201, `${url}: ${res.body}`);
    }
  });

  test('PUT checks a new url the same way and keeps the old one when refused', async () => {
    const w = await register(strict, { url: 'https://hooks.example.com/esign', events: ['*'] });
    for (const url of ['http://169.254.169.254/', 'http://private.example.com/', 'http://signet.test/x', 'https://u:p@hooks.example.com/']) {
      assertError(await put(strict, w.id, { url }), 400, 'INVALID_WEBHOOK_URL');
    }
    assert.equal((await get(strict, w.id)).json().url, 'https://hooks.example.com/esign');
    const moved = await put(strict, w.id, { url: 'https://hooks.example.com/v2' });
    assert.equal(moved.statusCode, 200, moved.body);
    assert.equal(moved.json().url, 'https://hooks.example.com/v2');
  });

  test('WEBHOOK_ALLOW_HOSTS exempts exactly the named host', async () => {
    const r = await receiver();
    await register(t, { url: r.url(), events: ['*'] });
    assertError(await post(t, { url: `http://127.0.0.2:${r.port}/hook`, events: ['*'] }), 400, 'INVALID_WEBHOOK_URL');
    assertError(await post(t, { url: 'http://169.254.169.254/', events: ['*'] }), 400, 'INVALID_WEBHOOK_URL');
    assertError(await post(strict, { url: r.url(), events: ['*'] }), 400, 'INVALID_WEBHOOK_URL');
  });
});

describe('updates and deletion', () => {
  test('PUT re-activation resets consecutiveFailures; other updates keep the count', async () => {
    const r = await receiver();
    const w = await register(t, { url: r.url(), events: ['*'] });
    // State surgery: a registration disabled after failures (delivery tests reach this state for real).
    await t.container.db.execute(sql`UPDATE webhooks SET active = false, consecutive_failures = 7, disabled_reason = 'test' WHERE id = ${w.id}`);
    const disabled = (await get(t, w.id)).json();
    assert.equal(disabled.active, false);
    assert.equal(disabled.consecutiveFailures, 7);

    const described = await put(t, w.id, { description: 'still off' });
    assert.equal(described.statusCode, 200);
    assert.equal(described.json().consecutiveFailures, 7, 'a PUT that does not re-activate keeps the count');
    assert.equal(described.json().active, false);

    await sleep(5);
    const res = await put(t, w.webhookId, { active: true });
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.id, w.id);
    assert.equal(body.active, true);
    assert.equal(body.consecutiveFailures, 0);
    assert.equal(body.disabledReason, null);
    assert.ok(Date.parse(body.updatedAt) > Date.parse(disabled.updatedAt), 'updatedAt moves');
    assert.deepEqual((await get(t, w.id)).json(), body, 'GET answers what PUT answered');

    const off = (await put(t, w.id, { active: false, events: ['envelope.sent'] })).json();
    assert.equal(off.active, false);
    assert.deepEqual(off.events, ['envelope.sent']);
  });

  test('DELETE stops pending deliveries and keeps the delivery history', async () => {
    const failing = await receiver({ fallback: 500 });
    const c = await t.createCustomer(500);
    const w = await register(t, { url: failing.url(), events: ['*'] }, c.apiKey);
    const env = await createEnvelope(t, { title: 'Delete me', recipients: [person('del')] }, { apiKey: c.apiKey });
    // The first attempt fails; with the default schedule the next one is a minute away.
    const pending = await until('a failed first attempt', async () => {
      const d = (await deliveriesOf(w.id, c.apiKey)).data[0];
      return d && d.attempts === 1 ? d : undefined;
    });
    assert.equal(pending.status, 'PENDING');
    assert.equal(pending.envelopeId, env.envelopeId);
    assert.equal(pending.responseCode, 500);
    assert.ok(pending.nextRetryAt);
    assert.equal(failing.requests.length, 1);

    const res = await del(t, w.id, c.apiKey);
    assert.equal(res.statusCode, 204, res.body);
    assert.equal(res.body, '');

    // The rows stay for operators; the pending one is closed.
    const rows = rowsOf<{ id: string; status: string; attempts: number; error_message: string; next_retry_at: unknown }>(
      await t.container.db.execute(sql`SELECT id, status, attempts, error_message, next_retry_at FROM webhook_deliveries WHERE webhook_id = ${w.id}`),
    );
    assert.equal(rows.length, 1);
    assert.equal(rows[0].id, pending.id);
    assert.equal(rows[0].status, 'FAILED');
    assert.equal(rows[0].attempts, 1);
    assert.equal(rows[0].next_retry_at, null);
    assert.match(rows[0].error_message, /delet/i);
    const [hook] = rowsOf<{ deleted_at: unknown; active: boolean }>(await t.container.db.execute(sql`SELECT deleted_at, active FROM webhooks WHERE id = ${w.id}`));
    assert.ok(hook.deleted_at, 'the registration row is kept, marked deleted');

    // Its queued retry, made due now, sends nothing.
    await t.container.db.execute(sql`UPDATE jobs SET run_at = now() WHERE type = 'webhook.deliver' AND status = 'queued' AND payload->>'deliveryId' = ${pending.id}`);
    await until('the retry job to finish', async () => {
      const [j] = rowsOf<{ status: string }>(await t.container.db.execute(sql`SELECT status FROM jobs WHERE type = 'webhook.deliver' AND payload->>'deliveryId' = ${pending.id}`));
      return j.status === 'done';
    });
    // New events create no deliveries for it either.
    await signAs(t, recipientToken(env, env.recipients[0].email));
    await until('the envelope to complete', async () => (await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(c.apiKey) })).json().status === 'COMPLETED');
    const [n] = rowsOf<{ n: string | number }>(await t.container.db.execute(sql`SELECT count(*) AS n FROM webhook_deliveries WHERE webhook_id = ${w.id}`));
    assert.equal(Number(n.n), 1);
    assert.equal(failing.requests.length, 1, 'nothing more was sent');
  });

  test('DELETE ?alt=1 answers 200 {success: true}', async () => {
    const r = await receiver();
    const w = await register(t, { url: r.url(), events: ['*'] });
    const res = await del(t, w.webhookId, t.customer.apiKey, '?alt=1');
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { success: true });
    assertError(await get(t, w.id), 404, 'WEBHOOK_NOT_FOUND');
  });
});

describe('events reach the registrations subscribed to them', () => {
  test('a name list gets only its events, "*" gets all, inactive and test-mode registrations get none of a live envelope', async () => {
    const c: TestCustomer = await t.createCustomer(500);
    const [rSent, rSigned, rAll, rOff, rTest] = await Promise.all([receiver(), receiver(), receiver(), receiver(), receiver()]);
    const onlySent = await register(t, { url: rSent.url(), events: ['envelope.sent'] }, c.apiKey);
    const signedDone = await register(t, { url: rSigned.url(), events: ['envelope.signed', 'envelope.completed'] }, c.apiKey);
    const all = await register(t, { url: rAll.url(), events: ['*'] }, c.apiKey);
    const off = await register(t, { url: rOff.url(), events: ['*'] }, c.apiKey);
    assert.equal((await put(t, off.id, { active: false }, c.apiKey)).statusCode, 200);
    const testMode = await register(t, { url: rTest.url(), events: ['*'] }, c.testApiKey);

    const env = await createEnvelope(t, { title: 'Events', recipients: [person('ev')] }, { apiKey: c.apiKey });
    const token = recipientToken(env, env.recipients[0].email);
    await until('envelope.sent delivered', async () => rAll.requests.length >= 1);
    await openAs(t, token);
    await signAs(t, token);

    const expected = ['envelope.completed', 'envelope.sent', 'envelope.signed', 'envelope.viewed'];
    const successful = async (id: string) => (await deliveriesOf(id, c.apiKey, '?limit=100')).data.filter((d) => d.status === 'SUCCESS');
    await until('four deliveries to "*"', async () => (await successful(all.id)).length === 4 && (await successful(signedDone.id)).length === 2);
    // Let anything that should not have been created have its chance to show up.
    await sleep(300);

    const eventsOf = async (id: string) => (await deliveriesOf(id, c.apiKey, '?limit=100')).data.map((d) => d.event as string).sort();
    assert.deepEqual(await eventsOf(all.id), expected);
    assert.deepEqual(await eventsOf(onlySent.id), ['envelope.sent']);
    assert.deepEqual(await eventsOf(signedDone.id), ['envelope.completed', 'envelope.signed']);
    assert.deepEqual(await eventsOf(off.id), []);
    assert.deepEqual((await deliveriesOf(testMode.id, c.testApiKey)).data, []);
    // What the receivers saw agrees.
    const seen = (r: Receiver) => r.requests.map((q) => q.headers['x-service-event']).sort();
    assert.deepEqual(seen(rAll), expected);
    assert.deepEqual(seen(rSent), ['envelope.sent']);
    assert.deepEqual(seen(rSigned), ['envelope.completed', 'envelope.signed']);
    assert.equal(rOff.requests.length, 0);
    assert.equal(rTest.requests.length, 0);
    assert.equal(new Set(rAll.requests.map((q) => q.headers['x-service-delivery-id'])).size, 4, 'one delivery id per event');

    // A test-mode envelope reaches the test-mode registration only.
    const testEnv = await createEnvelope(t, { title: 'Test events', recipients: [person('tev')] }, { apiKey: c.testApiKey });
    await until('test-mode envelope.sent', async () => rTest.requests.length >= 1);
    await sleep(300);
    const [d] = (await deliveriesOf(testMode.id, c.testApiKey)).data;
    assert.equal(d.event, 'envelope.sent');
    assert.equal(d.envelopeId, testEnv.envelopeId);
    assert.equal(rAll.requests.length, 4);
    assert.equal(rSent.requests.length, 1);

    // The deliveries list filters by status and pages.
    assert.equal((await deliveriesOf(all.id, c.apiKey, '?status=SUCCESS')).total, 4);
    assert.equal((await deliveriesOf(all.id, c.apiKey, '?status=FAILED')).total, 0);
    const page = await deliveriesOf(all.id, c.apiKey, '?limit=3&offset=3');
    assert.equal(page.total, 4);
    assert.equal(page.data.length, 1);
    const alt = (await deliveries(t, all.webhookId, c.apiKey, '?page=1&perPage=2')).json();
    assert.deepEqual({ page: alt.page, perPage: alt.perPage, total: alt.total, n: alt.data.length }, { page: 1, perPage: 2, total: 4, n: 2 });
  });
});
