/**
 * The dashboard's data pages through app.inject with a real session: overview, API keys (mint shown
 * once, revoke refused by the API at once, CSRF, ownership, the active-key bound, last used), envelopes
 * (filter, paging, detail, download only when COMPLETED, test data, escaping, other customers' 404),
 * webhooks with their deliveries, and products enabled through SPEC.md's /v1 route with the cookie.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { apiKeys, auditLog } from '../src/db/schema/index.js';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { form, signInDashboard, type DashboardBrowser } from './fixtures/dashboard.js';
import { createEnvelope, drain, envelopeBody, person, postMultipart, recipientToken, samplePdf, sigField, signAs } from './fixtures/envelopes.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';

let t: TestApp;
let b: DashboardBrowser;
let receiver: Receiver;

before(async () => {
  t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
  b = await signInDashboard(t);
  receiver = await startReceiver();
});
after(async () => {
  await t?.close();
  await receiver?.close();
});

const page = (url: string, browser: DashboardBrowser | null = b) => t.app.inject({ url, headers: browser ? { cookie: browser.cookie } : {} });
const post = (url: string, fields: Record<string, string> = {}, browser = b) => t.app.inject({ method: 'POST', url, ...form(browser, fields) });

const NEW_KEY = /<code id="new-key" class="secret">(svc_(?:live|test)_[0-9a-f]{32})<\/code>/;
const ENVELOPE_LINK = /href="\/dashboard\/envelopes\/([0-9a-f-]{36})(?:\?mode=test)?"/g;

async function mint(mode: 'live' | 'test', browser = b): Promise<string> {
  const res = await post('/dashboard/keys', { mode }, browser);
  assert.equal(res.statusCode, 200, res.body);
  const key = NEW_KEY.exec(res.body)?.[1];
  assert.ok(key, 'the new key is on the page');
  return key;
}

const keyRow = async (key: string) => (await t.container.db.select().from(apiKeys).where(eq(apiKeys.prefix, key.slice(0, 17))))[0];

async function auditActions(customerId: string): Promise<string[]> {
  const rows = await t.container.db.select().from(auditLog).where(eq(auditLog.customerId, customerId));
  return rows.map((r) => `${r.action}:${r.actorType}`);
}

/** A customer of its own with a signed-in browser, so counts and lists start empty. */
async function freshCustomer(creditCents = 500): Promise<{ c: TestCustomer; browser: DashboardBrowser }> {
  const c = await t.createCustomer(creditCents);
  return { c, browser: await signInDashboard(t, c.id) };
}

function assertErrorPage(res: { statusCode: number; body: string; headers: Record<string, unknown> }, status: number, code: string): void {
  assert.equal(res.statusCode, status, res.body.slice(0, 500));
  assert.match(String(res.headers['content-type']), /^text\/html/);
  assert.match(res.body, new RegExp(`<code>${code}</code>`));
}

describe('every page', () => {
  test('answers 200 with HTML for a signed-in customer, and 303 to sign-in without a session', async () => {
    const env = await createEnvelope(t, { title: 'Page tour', recipients: [person('tour')] });
    const urls = ['/dashboard', '/dashboard?mode=test', '/dashboard/keys', '/dashboard/envelopes', '/dashboard/envelopes?mode=test', `/dashboard/envelopes/${env.envelopeId}`, '/dashboard/webhooks', '/dashboard/webhooks?mode=test', '/dashboard/products'];
    for (const url of urls) {
      const res = await page(url);
      assert.equal(res.statusCode, 200, `${url}: ${res.body.slice(0, 300)}`);
      assert.match(String(res.headers['content-type']), /^text\/html/, url);
      assert.equal(res.headers['cache-control'], 'no-store', url);
      assert.match(String(res.headers['content-security-policy']), /script-src 'self'/, url);
      assert.doesNotMatch(res.body, /<script>|style="/, `${url}: no inline script or style`);

      const anonymous = await page(url, null);
      assert.equal(anonymous.statusCode, 303, url);
      assert.equal(anonymous.headers.location, `/dashboard/sign-in?returnTo=${encodeURIComponent(url)}`);
      const bogus = await t.app.inject({ url, headers: { cookie: `svc_session=${'x'.repeat(43)}` } });
      assert.equal(bogus.statusCode, 303, `${url} with an unknown session`);
    }
  });
});

describe('API keys', () => {
  test('a minted live or test key is shown once, with a copy button, and works against the API', async () => {
    for (const mode of ['live', 'test'] as const) {
      const res = await post('/dashboard/keys', { mode });
      assert.equal(res.statusCode, 200, res.body);
      assert.equal(res.headers['cache-control'], 'no-store');
      const key = NEW_KEY.exec(res.body)?.[1] ?? assert.fail('no key on the page');
      assert.ok(key.startsWith(`svc_${mode}_`), `a ${mode} key`);
      assert.match(res.body, /data-copy="new-key"/);
      assert.match(res.body, /only time the key is shown/);

      const account = await t.app.inject({ url: '/v1/account', headers: bearer(key) });
      assert.equal(account.statusCode, 200, account.body);
      assert.equal(account.json().mode, mode);
      assert.equal(account.json().accountId, t.customer.id);

      // Listed by prefix from now on, never again in full.
      const list = await page('/dashboard/keys');
      assert.ok(!list.body.includes(key), 'the key is not shown again');
      assert.ok(list.body.includes(`<code>${key.slice(0, 17)}…</code>`), 'its prefix is listed');
    }
    assert.equal((await auditActions(t.customer.id)).filter((a) => a === 'api_key.create:session').length, 2);
  });

  test('a revoked key is refused by the API at once', async () => {
    const key = await mint('live');
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(key) })).statusCode, 200, 'in use (and cached)');
    const row = await keyRow(key);
    const res = await post(`/dashboard/keys/${row.id}/revoke`);
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, `/dashboard/keys?revoked=${row.id}`);
    const refused = await t.app.inject({ url: '/v1/account', headers: bearer(key) });
    assert.equal(refused.statusCode, 401, refused.body);
    assert.equal(refused.json().code, 'UNAUTHORIZED');

    const back = await page(String(res.headers.location));
    assert.match(back.body, new RegExp(`Revoked ${row.prefix}…`));
    assert.ok((await auditActions(t.customer.id)).includes('api_key.revoke:session'));
    // Active keys are listed before revoked ones.
    const firstRevoked = back.body.indexOf('>Revoked<');
    const lastActive = back.body.lastIndexOf('>Active<');
    assert.ok(firstRevoked > lastActive, 'active keys come first');
  });

  test("another customer's key cannot be revoked (404) and keeps working; a malformed id is 404 too", async () => {
    const other = await t.createCustomer();
    const [otherKey] = await t.container.repos.accounts.listKeys(t.container.db, other.id);
    assertErrorPage(await post(`/dashboard/keys/${otherKey.id}/revoke`), 404, 'API_KEY_NOT_FOUND');
    assertErrorPage(await post('/dashboard/keys/not-a-key/revoke'), 404, 'API_KEY_NOT_FOUND');
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(other.apiKey) })).statusCode, 200);
  });

  test('minting and revoking without the CSRF token are refused (403) and change nothing', async () => {
    const before = (await t.container.repos.accounts.listKeys(t.container.db, t.customer.id)).length;
    const bare = { 'content-type': 'application/x-www-form-urlencoded', cookie: b.cookie };
    assertErrorPage(await t.app.inject({ method: 'POST', url: '/dashboard/keys', headers: bare, payload: 'mode=live' }), 403, 'CSRF_TOKEN_INVALID');
    // A token of another browser does not fit this browser's CSRF cookie.
    const stranger = await signInDashboard(t);
    assertErrorPage(await t.app.inject({ method: 'POST', url: '/dashboard/keys', headers: bare, payload: `mode=live&_csrf=${stranger.csrf}` }), 403, 'CSRF_TOKEN_INVALID');
    assert.equal((await t.container.repos.accounts.listKeys(t.container.db, t.customer.id)).length, before);

    const key = await mint('test');
    const row = await keyRow(key);
    assertErrorPage(await t.app.inject({ method: 'POST', url: `/dashboard/keys/${row.id}/revoke`, headers: bare, payload: '' }), 403, 'CSRF_TOKEN_INVALID');
    assert.equal((await keyRow(key)).revokedAt, null);
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(key) })).statusCode, 200);
    // Without a session a form post is refused before its token is looked at (401, no redirect for a POST).
    assert.equal((await t.app.inject({ method: 'POST', url: '/dashboard/keys', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'mode=live' })).statusCode, 401);
  });

  test('only a dashboard session mints or revokes: an API key or a wallet cannot, even through the service', async () => {
    const { apiKeys } = t.container.services;
    for (const via of ['api_key', 'wallet_jwt', 'x402'] as const) {
      const ctx = { actor: { customerId: t.customer.id, mode: 'live' as const, via, keyId: null }, requestId: 'r', ip: '127.0.0.1', testModeHeader: false };
      await assert.rejects(t.container.db.transaction((tx) => apiKeys.mint(tx, ctx, 'live')), { code: 'FORBIDDEN' });
      await assert.rejects(t.container.db.transaction((tx) => apiKeys.revoke(tx, ctx, '00000000-0000-0000-0000-000000000000')), { code: 'FORBIDDEN' });
    }
  });

  test('a mint needs a mode of live or test', async () => {
    assertErrorPage(await post('/dashboard/keys', { mode: 'admin' }), 400, 'VALIDATION_ERROR');
    assertErrorPage(await post('/dashboard/keys', {}), 400, 'VALIDATION_ERROR');
  });

  test('the key records when it was last used, written at most once a minute', async () => {
    const key = await mint('live');
    assert.equal((await keyRow(key)).lastUsedAt, null);
    assert.match((await page('/dashboard/keys')).body, /Never/);
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(key) })).statusCode, 200);
    const used = (await keyRow(key)).lastUsedAt;
    assert.ok(used && Date.now() - used.getTime() < 60_000, 'last_used_at written on first use');
    const row = await keyRow(key);
    const listed = await page('/dashboard/keys');
    assert.ok(listed.body.includes(`<time datetime="${used.toISOString()}`), 'shown on the page');

    // Within the minute a use writes nothing: move the column back and see it stay there.
    await t.container.db.execute(sql`UPDATE api_keys SET last_used_at = '2020-01-01T00:00:00Z' WHERE id = ${row.id}`);
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(key) })).statusCode, 200);
    assert.equal((await keyRow(key)).lastUsedAt?.toISOString(), '2020-01-01T00:00:00.000Z');
  });

  test('active keys per customer are bounded; revoking one makes room', async () => {
    const { c, browser } = await freshCustomer();
    // The operator gave the customer two keys; 18 more reach the bound of 20.
    for (let i = 0; i < 18; i++) await mint(i % 2 ? 'live' : 'test', browser);
    const full = await page('/dashboard/keys', browser);
    assert.match(full.body, /20 active of 20 allowed/);
    assert.match(full.body, /<button type="submit" disabled/);
    assertErrorPage(await post('/dashboard/keys', { mode: 'live' }, browser), 409, 'API_KEY_LIMIT_REACHED');
    const [oldest] = (await t.container.repos.accounts.listKeys(t.container.db, c.id)).slice(-1);
    assert.equal((await post(`/dashboard/keys/${oldest.id}/revoke`, {}, browser)).statusCode, 303);
    await mint('live', browser);
  });
});

describe('envelopes', () => {
  test("lists and shows the customer's envelopes with recipients and events; another customer's are 404 and absent", async () => {
    const env = await createEnvelope(t, { title: 'Lease renewal', recipients: [person('tenant'), person('landlord', 'APPROVER')] });
    await drain(t);
    const list = await page('/dashboard/envelopes');
    assert.ok(list.body.includes(`/dashboard/envelopes/${env.envelopeId}`));
    assert.match(list.body, /<label for="status-filter">Status<\/label>/);

    const detail = await page(`/dashboard/envelopes/${env.envelopeId}`);
    assert.equal(detail.statusCode, 200);
    for (const r of env.recipients) assert.ok(detail.body.includes(r.email), r.email);
    assert.match(detail.body, /Approver/);
    assert.match(detail.body, /<code>envelope\.sent<\/code>/, 'the events are listed');
    // Issue 36.3: the sender copies a recipient's link from the page (the links are theirs; the page is no-store).
    assert.ok(detail.body.includes(`<code id="link-1" class="id">${env.recipients[0].signingUrl}</code>`), "a recipient's signing link is shown beside its Copy button");

    const other = await t.createCustomer(500);
    const theirs = await createEnvelope(t, { title: 'Not yours', recipients: [person('x')] }, { apiKey: other.apiKey });
    assertErrorPage(await page(`/dashboard/envelopes/${theirs.envelopeId}`), 404, 'ENVELOPE_NOT_FOUND');
    assertErrorPage(await page(`/dashboard/envelopes/${theirs.envelopeId}/download`), 404, 'ENVELOPE_NOT_FOUND');
    assert.ok(!(await page('/dashboard/envelopes')).body.includes(theirs.envelopeId));
    assert.ok(!(await page('/dashboard')).body.includes(theirs.envelopeId));
  });

  test('malformed and unknown ids are a 404 page, not a 500', async () => {
    for (const id of ['not-a-uuid', '00000000-0000-0000-0000-000000000000', '%00', "1'%20OR%20'1'='1", '..%2F..%2Fkeys']) {
      assertErrorPage(await page(`/dashboard/envelopes/${id}`), 404, 'ENVELOPE_NOT_FOUND');
      assertErrorPage(await page(`/dashboard/envelopes/${id}/download`), 404, 'ENVELOPE_NOT_FOUND');
    }
    // Longer than the router's parameter limit: no route matches, and the dashboard's own 404 page answers.
    assertErrorPage(await page(`/dashboard/envelopes/${'a'.repeat(300)}`), 404, 'NOT_FOUND');
    assertErrorPage(await page('/dashboard/no-such-page'), 404, 'NOT_FOUND');
  });

  test('the status filter and Previous/Next paging', async () => {
    const { c, browser } = await freshCustomer(1000);
    const pdf = envelopeBody([await samplePdf()], { title: 'Draft', draft: true, recipients: [{ email: 'd@example.com', name: 'D', role: 'SIGNER' }], fields: [sigField('d@example.com')] });
    for (let i = 0; i < 22; i++) assert.equal((await postMultipart(t, pdf, { apiKey: c.apiKey, url: '/v1/envelopes/draft' })).statusCode, 201);
    const sent = await createEnvelope(t, { title: 'Sent one', recipients: [person('s')] }, { apiKey: c.apiKey });
    const ids = (body: string) => [...body.matchAll(ENVELOPE_LINK)].map((m) => m[1]);

    const all = await page('/dashboard/envelopes', browser);
    assert.equal(ids(all.body).length, 20);
    assert.match(all.body, /1–20 of 23/);
    assert.match(all.body, /href="\/dashboard\/envelopes\?page=2" rel="next"/);
    assert.match(all.body, /<span aria-disabled="true">← Previous<\/span>/);

    const drafts1 = await page('/dashboard/envelopes?status=DRAFT', browser);
    assert.equal(ids(drafts1.body).length, 20);
    assert.ok(!ids(drafts1.body).includes(sent.envelopeId));
    assert.match(drafts1.body, /<option value="DRAFT" selected>/);
    assert.match(drafts1.body, /href="\/dashboard\/envelopes\?status=DRAFT&amp;page=2" rel="next"/);
    const drafts2 = await page('/dashboard/envelopes?status=DRAFT&page=2', browser);
    assert.equal(ids(drafts2.body).length, 2);
    assert.match(drafts2.body, /21–22 of 22/);
    assert.match(drafts2.body, /href="\/dashboard\/envelopes\?status=DRAFT" rel="prev"/);
    assert.match(drafts2.body, /<span aria-disabled="true">Next →<\/span>/);

    const pending = await page(`/dashboard/envelopes?status=${sent.status}`, browser);
    assert.deepEqual(ids(pending.body), [sent.envelopeId]);
    // A hand-edited query falls back rather than failing.
    assert.equal((await page('/dashboard/envelopes?status=NOPE&page=-3', browser)).statusCode, 200);
    assert.match((await page('/dashboard/envelopes?page=9', browser)).body, /There is no page 9/);
  });

  test('the download is offered and served only once the envelope is COMPLETED', async () => {
    const signerA = person('a');
    const env = await createEnvelope(t, { title: 'To be sealed', recipients: [signerA] });
    await drain(t);
    const before = await page(`/dashboard/envelopes/${env.envelopeId}`);
    assert.ok(!before.body.includes('/download'), 'no download link before COMPLETED');
    assertErrorPage(await page(`/dashboard/envelopes/${env.envelopeId}/download`), 400, 'ENVELOPE_NOT_COMPLETE');

    await signAs(t, recipientToken(env, signerA.email));
    await drain(t);
    const detail = await page(`/dashboard/envelopes/${env.envelopeId}`);
    assert.match(detail.body, /<span class="badge good">Completed<\/span>/);
    assert.ok(detail.body.includes(`href="/dashboard/envelopes/${env.envelopeId}/download"`));
    const pdf = await page(`/dashboard/envelopes/${env.envelopeId}/download`);
    assert.equal(pdf.statusCode, 200);
    assert.equal(pdf.headers['content-type'], 'application/pdf');
    assert.equal(pdf.headers['content-disposition'], 'attachment; filename="To_be_sealed-signed.pdf"');
    assert.equal(pdf.rawPayload.subarray(0, 5).toString(), '%PDF-');
    assert.equal(Number(pdf.headers['content-length']), pdf.rawPayload.length);
    assert.equal((await page(`/dashboard/envelopes/${env.envelopeId}/download`, null)).statusCode, 303);
  });

  test('a hostile title is escaped on every page that shows it', async () => {
    const title = `<script>alert("x")</script><img src=x onerror=alert(1)>`;
    const env = await createEnvelope(t, { title, recipients: [person('h', 'SIGNER', { name: '<b>Bold</b> & co' })] });
    for (const url of ['/dashboard', '/dashboard/envelopes', `/dashboard/envelopes/${env.envelopeId}`]) {
      const res = await page(url);
      assert.ok(!res.body.includes('<script>alert'), url);
      assert.ok(!res.body.includes('<img src=x'), url);
      assert.ok(res.body.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;'), url);
    }
    assert.ok((await page(`/dashboard/envelopes/${env.envelopeId}`)).body.includes('&lt;b&gt;Bold&lt;/b&gt; &amp; co'));
  });

  test('test data shows only under ?mode=test, with its switch and banner', async () => {
    const env = await createEnvelope(t, { title: 'Sandbox run', recipients: [person('t')] }, { apiKey: t.customer.testApiKey });
    const live = await page('/dashboard/envelopes');
    assert.ok(!live.body.includes(env.envelopeId));
    assert.match(live.body, /href="\/dashboard\/envelopes\?mode=test">Test \([1-9]\d*\)<\/a>/);
    const test = await page('/dashboard/envelopes?mode=test');
    assert.ok(test.body.includes(`/dashboard/envelopes/${env.envelopeId}?mode=test`));
    assert.match(test.body, /class="test-banner"/);
    assert.match(test.body, /href="\/dashboard\/envelopes\?mode=live">Live \(\d+\)<\/a>/);
    assert.match(test.body, /href="\/dashboard\/envelopes\?mode=test" aria-current="page">Test \([1-9]\d*\)<\/a>/);
    assertErrorPage(await page(`/dashboard/envelopes/${env.envelopeId}`), 404, 'ENVELOPE_NOT_FOUND');
    assert.equal((await page(`/dashboard/envelopes/${env.envelopeId}?mode=test`)).statusCode, 200);
    assert.ok((await page('/dashboard?mode=test')).body.includes(env.envelopeId));
  });
});

describe('webhooks', () => {
  async function register(apiKey: string, path: string): Promise<string> {
    const res = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...bearer(apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ url: receiver.url(path), events: ['*'], description: 'CRM <sync>' }) });
    assert.equal(res.statusCode, 201, res.body);
    return res.json().id;
  }

  test("registrations with their recent deliveries; another customer's and test ones are not on the live page", async () => {
    const { c, browser } = await freshCustomer(500);
    const id = await register(c.apiKey, '/mine');
    await register(c.testApiKey, '/mine-test');
    const other = await t.createCustomer(500);
    await register(other.apiKey, '/theirs');
    await createEnvelope(t, { title: 'Hooked', recipients: [person('w')] }, { apiKey: c.apiKey });
    await drain(t);

    const res = await page('/dashboard/webhooks', browser);
    assert.equal(res.statusCode, 200);
    assert.ok(res.body.includes(receiver.url('/mine')));
    assert.ok(res.body.includes(`wh_${id}`));
    assert.ok(res.body.includes('CRM &lt;sync&gt;'));
    assert.ok(!res.body.includes('/theirs'), "another customer's registration is absent");
    assert.ok(!res.body.includes('/mine-test'), 'a test registration is not on the live page');
    assert.match(res.body, /<span class="badge good">Active<\/span>/);
    assert.match(res.body, /<code>envelope\.sent<\/code>/);
    assert.match(res.body, /<span class="badge good">Success<\/span>/);
    assert.match(res.body, /<td data-label="Response"><code>200<\/code><\/td>/);

    const test = await page('/dashboard/webhooks?mode=test', browser);
    assert.ok(test.body.includes('/mine-test'));
    assert.ok(!test.body.includes(receiver.url('/mine"')));
    assert.match(test.body, /No deliveries yet/);
  });

  test('no registrations: how to add one', async () => {
    const { browser } = await freshCustomer();
    assert.match((await page('/dashboard/webhooks', browser)).body, /No webhook endpoints/);
  });
});

describe('overview', () => {
  test('balance, test sends, the spending chart with its table, and the five most recent envelopes', async () => {
    const { c, browser } = await freshCustomer(500);
    const made = [];
    for (let i = 0; i < 6; i++) made.push(await createEnvelope(t, { title: `Contract ${i}`, recipients: [person(`o${i}`)] }, { apiKey: c.apiKey }));
    await createEnvelope(t, { title: 'Sandbox', recipients: [person('sb')] }, { apiKey: c.testApiKey });
    const res = await page('/dashboard', browser);
    assert.equal(res.statusCode, 200);
    assert.match(res.body, /<span class="value">\$4\.40<\/span>/, 'balance after six sends at $0.10');
    assert.match(res.body, /1 <small>of 100<\/small>/, 'one free test send used');
    assert.match(res.body, /<svg class="chart" role="img" aria-labelledby="spending-title spending-desc"/);
    assert.match(res.body, /<desc id="spending-desc">\$0\.60 spent from/);
    assert.match(res.body, /<details><summary>Show the numbers as a table<\/summary>/);
    const today = new Date().toISOString().slice(0, 10);
    assert.ok(res.body.includes(`<td data-label="Day (UTC)"><time datetime="${today}">${today}</time></td><td data-label="Spent">$0.60</td>`));
    const shown = [...res.body.matchAll(ENVELOPE_LINK)].map((m) => m[1]);
    assert.deepEqual(shown, made.slice(1).reverse().map((e) => e.envelopeId), 'the five newest live envelopes, newest first');
    assert.doesNotMatch(res.body, /Get started/, 'the customer has keys');
  });

  test('an account without an API key is led to the keys page, then to the first call, until it has sent', async () => {
    const customer = await t.container.db.transaction((tx) => t.container.repos.accounts.insertCustomer(tx, { email: 'new@example.com', emailVerified: true, name: 'New Co', sandboxLimit: 100 }));
    const browser = await signInDashboard(t, customer.id);
    const first = await page('/dashboard', browser);
    assert.match(first.body, /Get started in three steps/);
    assert.match(first.body, /<a role="button" href="\/dashboard\/keys">Create your first API key<\/a>/);
    assert.match(first.body, /Nothing spent from/);
    const key = await mint('test', browser);
    const minted = await page('/dashboard', browser);
    assert.match(minted.body, /Get started in three steps/, 'a key, but nothing sent: the first call is still the way on');
    assert.match(minted.body, /id="first-call"/);
    assert.doesNotMatch(minted.body, /Create your first API key/);
    const signerOne = person('first');
    const sent = await postMultipart(t, envelopeBody([await samplePdf()], { title: 'First', recipients: [signerOne], fields: [sigField(signerOne.email)] }), { apiKey: key });
    assert.equal(sent.statusCode, 201, sent.body);
    assert.doesNotMatch((await page('/dashboard', browser)).body, /Get started/);
  });
});

describe('products', () => {
  test('PRODUCT_ID is enabled through POST /v1/account/products/{product}/enable with the cookie and the page token', async () => {
    const { c, browser } = await freshCustomer();
    const before = await page('/dashboard/products', browser);
    assert.match(before.body, /<button type="button" data-enable-product="service_id" aria-describedby="product-status-service_id">/);
    assert.match(before.body, /<p id="product-status-service_id" role="status"/);

    const enable = (headers: Record<string, string>) => t.app.inject({ method: 'POST', url: '/v1/account/products/service_id/enable', headers: { cookie: browser.cookie, ...headers } });
    const refused = await enable({});
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(refused.json().code, 'CSRF_TOKEN_INVALID');
    const ok = await enable({ 'x-csrf-token': browser.csrf });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().product, 'service_id');
    assert.equal(ok.json().enabled, true);

    const afterPage = await page('/dashboard/products', browser);
    assert.match(afterPage.body, /<span class="badge good">Enabled<\/span> since <time/);
    assert.doesNotMatch(afterPage.body, /data-enable-product/);
    const listed = await t.app.inject({ url: '/v1/account/products', headers: { cookie: browser.cookie } });
    assert.deepEqual(listed.json().data.map((p: { product: string }) => p.product), ['service_id']);
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.customerId, c.id), eq(auditLog.action, 'product.enable')));
    assert.equal(audit[0]?.actorType, 'session');
  });
});
