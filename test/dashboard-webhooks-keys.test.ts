// test-lane: once (dashboard pages over services whose SQL runs on both stores in their modules' own files)
/**
 * The dashboard's actions on webhooks and keys through app.inject with a real session and CSRF token:
 * create (the secret shown once), edit, delete, send a test event, redeliver; the live/test switch with
 * counts and an account with only test keys landing on test data; key labels at minting and after,
 * with their bounds; every table cell carrying its column name for the phone layout.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { form, signInDashboard, type DashboardBrowser } from './fixtures/dashboard.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';
import { createEnvelope, signer } from './fixtures/envelopes.js';

let t: TestApp;
let r: Receiver;
before(async () => {
  t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1' } });
  await t.container.worker.start();
  r = await startReceiver();
});
after(async () => {
  await t?.close();
  await r?.close();
});

async function fresh(): Promise<{ c: TestCustomer; b: DashboardBrowser }> {
  const c = await t.createCustomer();
  return { c, b: await signInDashboard(t, c.id) };
}

const page = (url: string, b: DashboardBrowser) => t.app.inject({ url, headers: { cookie: b.cookie } });
const postForm = (b: DashboardBrowser, url: string, fields: Record<string, string> = {}) => t.app.inject({ method: 'POST', url, ...form(b, fields) });
const apiList = async (c: TestCustomer, key = c.apiKey) => (await t.app.inject({ url: '/v1/webhooks', headers: bearer(key) })).json().data as { id: string; url: string; events: string[]; description: string | null; active: boolean }[];

describe('dashboard webhooks', () => {
  test('create shows the secret once; edit, test event, redeliver and delete act through the API service', async () => {
    const { c, b } = await fresh();
    const created = await postForm(b, '/dashboard/webhooks', { mode: 'live', url: r.url('/dash'), description: 'CRM', 'event:envelope.completed': 'on', 'event:envelope.signed': 'on' });
    assert.equal(created.statusCode, 200, created.body);
    assert.match(created.body, /<code id="new-secret" class="secret">whsec_[0-9a-f]{32}<\/code>/);
    const [hook] = await apiList(c);
    assert.equal(hook.url, r.url('/dash'));
    assert.deepEqual(hook.events.sort(), ['envelope.completed', 'envelope.signed']);
    assert.equal(hook.description, 'CRM');
    // The secret is never on the page again.
    assert.doesNotMatch((await page('/dashboard/webhooks', b)).body, /whsec_/);

    const test1 = await postForm(b, `/dashboard/webhooks/${hook.id}/test`, { mode: 'live' });
    assert.equal(test1.statusCode, 303, test1.body);
    assert.equal(test1.headers.location, '/dashboard/webhooks?mode=live&done=test');
    const [ping] = await r.waitFor(1);
    assert.equal(ping.headers['x-service-event'], 'ping');
    const deliveryId = String(ping.headers['x-service-delivery-id']).slice(4);
    // Wait for the outcome, then redeliver it from the page.
    for (let i = 0; i < 200; i++) {
      const d = (await t.app.inject({ url: `/v1/webhooks/${hook.id}/deliveries`, headers: bearer(c.apiKey) })).json().data[0];
      if (d.status === 'SUCCESS') break;
      await new Promise((ok) => setTimeout(ok, 50));
    }
    const shown = await page('/dashboard/webhooks?mode=live&done=test', b);
    assert.match(shown.body, /Test event queued/);
    assert.ok(shown.body.includes(`/dashboard/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`), 'a Redeliver button on the finished delivery');
    const again = await postForm(b, `/dashboard/webhooks/${hook.id}/deliveries/${deliveryId}/redeliver`, { mode: 'live' });
    assert.equal(again.statusCode, 303, again.body);
    const got = await r.waitFor(2);
    assert.equal(got[1].headers['x-service-event'], 'ping');
    assert.notEqual(got[1].headers['x-service-delivery-id'], got[0].headers['x-service-delivery-id']);

    const edited = await postForm(b, `/dashboard/webhooks/${hook.id}`, { mode: 'live', url: r.url('/moved'), description: '', 'event:*': 'on' });
    assert.equal(edited.statusCode, 303, edited.body);
    const [after1] = await apiList(c);
    assert.equal(after1.url, r.url('/moved'));
    assert.deepEqual(after1.events, ['*']);
    assert.equal(after1.description, null);
    // No "active" box ticked: disabled; a test event to it is refused on the page.
    assert.equal(after1.active, false);
    const refused = await postForm(b, `/dashboard/webhooks/${hook.id}/test`, { mode: 'live' });
    assert.equal(refused.statusCode, 409);
    assert.match(refused.body, /class="flash error" role="alert">This webhook is disabled/);

    const deleted = await postForm(b, `/dashboard/webhooks/${hook.id}/delete`, { mode: 'live' });
    assert.equal(deleted.statusCode, 303);
    assert.deepEqual(await apiList(c), []);
  });

  test('every action needs the CSRF token and a session; another account’s webhook is 404', async () => {
    const { c, b } = await fresh();
    const other = await fresh();
    const mine = (await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(c.apiKey), payload: { url: r.url(), events: ['*'] } })).json();
    for (const url of ['/dashboard/webhooks', `/dashboard/webhooks/${mine.id}`, `/dashboard/webhooks/${mine.id}/delete`, `/dashboard/webhooks/${mine.id}/test`]) {
      const noToken = await t.app.inject({ method: 'POST', url, headers: { cookie: b.cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'mode=live' });
      assert.equal(noToken.statusCode, 403, url);
      assert.match(noToken.body, /CSRF_TOKEN_INVALID/);
      const noSession = await t.app.inject({ method: 'POST', url, headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'mode=live' });
      assert.equal(noSession.statusCode, 401, url);
    }
    for (const url of [`/dashboard/webhooks/${mine.id}/delete`, `/dashboard/webhooks/${mine.id}/test`]) {
      const res = await postForm(other.b, url, { mode: 'live' });
      assert.equal(res.statusCode, 404, url);
      assert.match(res.body, /WEBHOOK_NOT_FOUND/);
    }
    assert.equal((await apiList(c)).length, 1);
  });

  test('bad input comes back on the page: no events, a deny-listed URL', async () => {
    const { c, b } = await fresh();
    const noEvents = await postForm(b, '/dashboard/webhooks', { mode: 'live', url: r.url() });
    assert.equal(noEvents.statusCode, 400);
    assert.match(noEvents.body, /Choose at least one event/);
    const denied = await postForm(b, '/dashboard/webhooks', { mode: 'live', url: 'http://10.0.0.5/hook', 'event:*': 'on' });
    assert.equal(denied.statusCode, 400);
    assert.match(denied.body, /class="flash error"/);
    assert.deepEqual(await apiList(c), []);
  });

  test('the switch names both sides with counts; an account with only test keys lands on test data', async () => {
    const { c, b } = await fresh();
    for (let i = 0; i < 3; i++) await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(c.testApiKey), payload: { url: r.url(), events: ['*'] } });
    const shown = await page('/dashboard/webhooks', b);
    assert.match(shown.body, /<a href="\/dashboard\/webhooks\?mode=live">Live \(0\)<\/a>/);
    assert.match(shown.body, /<a href="\/dashboard\/webhooks\?mode=test" aria-current="page">Test \(3\)<\/a>/);
    const live = await page('/dashboard/webhooks?mode=live', b);
    assert.match(live.body, /aria-current="page">Live \(0\)</);

    // Only test keys, no data at all: test is shown, and says so.
    const lone = await fresh();
    const keys = await page('/dashboard/keys', lone.b);
    const liveKey = /action="\/dashboard\/keys\/([0-9a-f-]{36})\/revoke"[^>]*data-confirm="Revoke svc_live_/.exec(keys.body)?.[1];
    assert.ok(liveKey, 'the seeded live key is listed');
    assert.equal((await postForm(lone.b, `/dashboard/keys/${liveKey}/revoke`)).statusCode, 303);
    const testSide = await page('/dashboard/webhooks', lone.b);
    assert.match(testSide.body, /aria-current="page">Test \(0\)</);
    assert.match(testSide.body, /class="test-banner"/);
  });
});

describe('dashboard envelopes switch', () => {
  test('three test sends: the list lands on them and counts both sides, "Live (0) · Test (3)"', async () => {
    const { c, b } = await fresh();
    for (let i = 0; i < 3; i++) await createEnvelope(t, { title: `Trial ${i}`, recipients: [signer(1)] }, { apiKey: c.testApiKey });
    const shown = await page('/dashboard/envelopes', b);
    assert.match(shown.body, /<a href="\/dashboard\/envelopes\?mode=live">Live \(0\)<\/a>/);
    assert.match(shown.body, /<a href="\/dashboard\/envelopes\?mode=test" aria-current="page">Test \(3\)<\/a>/);
    assert.match(shown.body, /Trial 2/);
    // A filter is a question about one side (live unless asked), but the counts stay whole.
    const filtered = await page('/dashboard/envelopes?status=COMPLETED', b);
    assert.match(filtered.body, /aria-current="page">Live \(0\)</);
    assert.match(filtered.body, />Test \(3\)</);
  });
});

describe('dashboard key labels', () => {
  test('a label given at minting, changed and cleared after; shown in the table', async () => {
    const { b } = await fresh();
    const minted = await postForm(b, '/dashboard/keys', { mode: 'test', label: '  CI runner  ' });
    assert.equal(minted.statusCode, 200, minted.body);
    assert.match(minted.body, /value="CI runner" aria-label="Label of svc_test_/);
    const id = /action="\/dashboard\/keys\/([0-9a-f-]{36})\/label"[^>]*>(?:(?!<\/form>).)*value="CI runner"/s.exec(minted.body)?.[1];
    assert.ok(id);
    const renamed = await postForm(b, `/dashboard/keys/${id}/label`, { label: 'Staging <b>' });
    assert.equal(renamed.statusCode, 303);
    const shown = await page(renamed.headers.location as string, b);
    assert.match(shown.body, /Saved the label of svc_test_[0-9a-f]+…: Staging &lt;b&gt;\./);
    assert.match(shown.body, /value="Staging &lt;b&gt;"/);
    assert.equal((await postForm(b, `/dashboard/keys/${id}/label`, { label: '' })).statusCode, 303);
    assert.match((await page(`/dashboard/keys?labelled=${id}`, b)).body, /Removed the label/);
  });

  test('over 60 characters or with control characters is refused on the page; nothing saved; another account’s key is 404', async () => {
    const { b } = await fresh();
    const other = await fresh();
    const minted = await postForm(b, '/dashboard/keys', { mode: 'test', label: 'keep' });
    const id = /action="\/dashboard\/keys\/([0-9a-f-]{36})\/label"[^>]*>(?:(?!<\/form>).)*value="keep"/s.exec(minted.body)![1];
    for (const label of ['x'.repeat(61), 'line\nbreak', 'bell\u0007', 'rtl\u202Eoverride']) {
      const res = await postForm(b, `/dashboard/keys/${id}/label`, { label });
      assert.equal(res.statusCode, 400, JSON.stringify(label));
      assert.match(res.body, /A key&#39;s label: (at most 60 characters|no control characters or line breaks)\. Nothing was saved\./);
    }
    assert.equal((await postForm(b, `/dashboard/keys/${id}/label`, { label: 'é'.repeat(60) })).statusCode, 303, '60 characters are fine');
    const tooLongMint = await postForm(b, '/dashboard/keys', { mode: 'test', label: 'y'.repeat(61) });
    assert.equal(tooLongMint.statusCode, 400);
    assert.doesNotMatch(tooLongMint.body, /svc_test_[0-9a-f]{40,}/, 'no key minted');
    const theirs = await postForm(other.b, `/dashboard/keys/${id}/label`, { label: 'mine now' });
    assert.equal(theirs.statusCode, 404);
    assert.match(theirs.body, /API_KEY_NOT_FOUND/);
    const noToken = await t.app.inject({ method: 'POST', url: `/dashboard/keys/${id}/label`, headers: { cookie: b.cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: 'label=x' });
    assert.equal(noToken.statusCode, 403);
  });
});

describe('phone layout', () => {
  test('every table cell names its column (data-label), for the stacked rows', async () => {
    const { c, b } = await fresh();
    await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(c.apiKey), payload: { url: r.url(), events: ['*'] } });
    const [hook] = await apiList(c);
    assert.equal((await postForm(b, `/dashboard/webhooks/${hook.id}/test`, { mode: 'live' })).statusCode, 303);
    for (const url of ['/dashboard/keys', '/dashboard/webhooks']) {
      const body = (await page(url, b)).body;
      assert.match(body, /<table class="stack">/, url);
      assert.doesNotMatch(body, /<td>/, `${url}: a cell without data-label`);
    }
    assert.match((await page('/dashboard/keys', b)).body, /<td data-label="Action">/);
  });
});
