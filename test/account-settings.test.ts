/**
 * PATCH /v1/account: the holder's settings (display name, notification address and switch, consent
 * text) through an API key, a test key and the dashboard session with its CSRF token; every refusal
 * with its code; only the caller's own account changes; GET /v1/account shows the fields.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { auditLog, customers } from '../src/db/schema/index.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { signInDashboard } from './fixtures/dashboard.js';

let t: TestApp;

before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t?.close();
});

const patch = (payload: unknown, headers: Record<string, string> = bearer(t.customer.apiKey)) =>
  t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { 'content-type': 'application/json', ...headers }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });

const get = async (key = t.customer.apiKey) => (await t.app.inject({ url: '/v1/account', headers: bearer(key) })).json();

describe('PATCH /v1/account', () => {
  test('GET shows the defaults: the sign-up name, no notification address, notices on, the built-in consent text', async () => {
    const c = await t.createCustomer();
    const account = await get(c.apiKey);
    assert.equal(account.displayName, account.name);
    assert.equal(account.notificationEmail, null);
    assert.equal(account.senderNotifications, true);
    assert.equal(account.consentText, null);
  });

  test('changes only the fields given, answers the account, and audits which fields changed', async () => {
    const c = await t.createCustomer();
    const res = await patch({ displayName: '  Acme Legal  ', notificationEmail: 'contracts@acme.example', senderNotifications: false, consentText: 'We sign electronically.\n\nAsk us for paper.' }, bearer(c.apiKey));
    assert.equal(res.statusCode, 200, res.body);
    const body = res.json();
    assert.equal(body.displayName, 'Acme Legal');
    assert.equal(body.name, 'Acme Legal');
    assert.equal(body.displayNameIsDefault, false);
    assert.equal(body.notificationEmail, 'contracts@acme.example');
    assert.equal(body.senderNotifications, false);
    assert.equal(body.consentText, 'We sign electronically.\n\nAsk us for paper.');
    assert.equal(body.accountId, c.id);
    assert.deepEqual(await get(c.apiKey), body);

    // One field: the others stay; null resets to the defaults.
    const again = await patch({ notificationEmail: null, consentText: null }, bearer(c.apiKey));
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().notificationEmail, null);
    assert.equal(again.json().consentText, null);
    assert.equal(again.json().displayName, 'Acme Legal');
    assert.equal(again.json().senderNotifications, false);

    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.customerId, c.id), eq(auditLog.action, 'account.update')));
    assert.equal(audit.length, 2);
    assert.deepEqual(audit.map((a) => (a.metadata as { fields: string[] }).fields.sort()), [
      ['consentText', 'displayName', 'notificationEmail', 'senderNotifications'],
      ['consentText', 'notificationEmail'],
    ]);
  });

  test('a test key changes the settings too (they are not billable)', async () => {
    const c = await t.createCustomer();
    const res = await patch({ displayName: 'Test-key Co' }, bearer(c.testApiKey));
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().mode, 'test');
    assert.equal((await get(c.apiKey)).displayName, 'Test-key Co');
  });

  test('each refusal has its code: validation, wrong types, unknown fields, an empty body, oversize, malformed JSON, another content type', async () => {
    const cases: [unknown, string][] = [
      [{ displayName: '' }, 'body.displayName'],
      [{ displayName: '   ' }, 'body.displayName'],
      [{ displayName: 'x'.repeat(101) }, 'body.displayName'],
      [{ displayName: 'Evil\u202eCorp' }, 'body.displayName'],
      [{ displayName: 'Line\nbreak' }, 'body.displayName'],
      [{ displayName: 42 }, 'body.displayName'],
      [{ notificationEmail: 'not an address' }, 'body.notificationEmail'],
      [{ notificationEmail: 7 }, 'body.notificationEmail'],
      [{ senderNotifications: 'yes' }, 'body.senderNotifications'],
      [{ consentText: 'x'.repeat(5001) }, 'body.consentText'],
      [{ consentText: 'bell\u0007' }, 'body.consentText'],
      [{ consentText: '' }, 'body.consentText'],
      [{ name: 'not a setting' }, 'body'],
      [{}, 'body'],
      [[], 'body'],
    ];
    for (const [payload, path] of cases) {
      const res = await patch(payload);
      assert.equal(res.statusCode, 400, `${JSON.stringify(payload).slice(0, 60)}: ${res.body}`);
      assert.equal(res.json().code, 'VALIDATION_ERROR');
      assert.ok(res.json().details.some((d: { path: string }) => d.path.startsWith(path)), `${JSON.stringify(payload).slice(0, 60)} names ${path}: ${res.body}`);
    }
    // 5,000 characters is allowed, and a NUL is refused by the edge's text guard.
    assert.equal((await patch({ consentText: 'y'.repeat(5000) })).statusCode, 200);
    assert.equal((await patch({ displayName: 'a\u0000b' })).json().code, 'VALIDATION_ERROR');

    const bad = await patch('{"displayName": ');
    assert.equal(bad.statusCode, 400);
    assert.equal(bad.json().code, 'INVALID_JSON');

    const huge = await patch({ consentText: 'z'.repeat(70 * 1024) });
    assert.equal(huge.statusCode, 413, huge.body);
    assert.equal(huge.json().code, 'PAYLOAD_TOO_LARGE');

    const form = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { ...bearer(t.customer.apiKey), 'content-type': 'text/plain' }, payload: 'displayName=x' });
    assert.equal(form.statusCode, 415, form.body);
    assert.equal(form.json().code, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('needs a credential, and changes only the caller\'s own account', async () => {
    const none = await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: { 'content-type': 'application/json' }, payload: '{"displayName":"x"}' });
    assert.equal(none.statusCode, 401);
    assert.equal(none.json().code, 'UNAUTHORIZED');
    const wrong = await patch({ displayName: 'x' }, bearer('svc_live_' + '0'.repeat(32)));
    assert.equal(wrong.statusCode, 401);

    const a = await t.createCustomer();
    const b = await t.createCustomer();
    const before = await get(b.apiKey);
    // There is no id to aim at: whatever the body, a's key reaches a's account only.
    const res = await patch({ displayName: 'Mallory' }, bearer(a.apiKey));
    assert.equal(res.json().accountId, a.id);
    const [row] = await t.container.db.select().from(customers).where(eq(customers.id, b.id));
    assert.equal(row.name, before.name);
    assert.deepEqual(await get(b.apiKey), before);
  });

  test('the dashboard session changes them with the page\'s CSRF token, never without it', async () => {
    const c = await t.createCustomer();
    const browser = await signInDashboard(t, c.id);
    const noToken = await patch({ displayName: 'Forged' }, { cookie: browser.cookie });
    assert.equal(noToken.statusCode, 403, noToken.body);
    assert.equal(noToken.json().code, 'CSRF_TOKEN_INVALID');
    const other = await signInDashboard(t);
    const wrongToken = await patch({ displayName: 'Forged' }, { cookie: browser.cookie, 'x-csrf-token': other.csrf });
    assert.equal(wrongToken.json().code, 'CSRF_TOKEN_INVALID');
    assert.notEqual((await get(c.apiKey)).displayName, 'Forged');

    const ok = await patch({ displayName: 'Session Co' }, { cookie: browser.cookie, 'x-csrf-token': browser.csrf });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().displayName, 'Session Co');
    const [audit] = await t.container.db.select().from(auditLog).where(and(eq(auditLog.customerId, c.id), eq(auditLog.action, 'account.update')));
    assert.equal(audit.actorType, 'session');
  });

  test('an Idempotency-Key replays the first answer', async () => {
    const c = await t.createCustomer();
    const headers = { ...bearer(c.apiKey), 'idempotency-key': 'settings-1' };
    const first = await patch({ displayName: 'Once' }, headers);
    assert.equal(first.statusCode, 200, first.body);
    const second = await patch({ displayName: 'Once' }, headers);
    assert.equal(second.body, first.body);
    const reused = await patch({ displayName: 'Twice' }, headers);
    assert.equal(reused.json().code, 'IDEMPOTENCY_KEY_REUSED');
  });

  test('the OpenAPI documents the route, its body and every error code it answers', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const op = doc.paths['/v1/account'].patch;
    assert.equal(op.operationId, 'updateAccount');
    const codes = Object.values(op.responses as Record<string, { content?: Record<string, { schema: { properties?: { code?: { enum?: string[] } } } }> }>).flatMap(
      (r) => r.content?.['application/json']?.schema?.properties?.code?.enum ?? [],
    );
    for (const code of ['VALIDATION_ERROR', 'INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE', 'UNAUTHORIZED', 'CSRF_TOKEN_INVALID', 'IDEMPOTENCY_KEY_REUSED']) assert.ok(codes.includes(code), code);
  });
});
