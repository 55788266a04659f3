/**
 * The account's logo through app.inject on the real app and store: PUT and DELETE /v1/account/logo
 * (by API key, and by dashboard session with its CSRF token), the checks before anything decodes the
 * image, the public content-addressed /brand/<sha256>.<ext>, the dashboard's logo forms, and the logo
 * on the signing page's session and in the invitation's HTML, as recorded at create.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { auditLog } from '../src/db/schema/index.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError, createEnvelope, drain, multipart, outbox, person, PNG_DATA_URL, recipientToken, session, toOf } from './fixtures/envelopes.js';
import { signInDashboard } from './fixtures/dashboard.js';

let t: TestApp;
before(async () => {
  t = await createTestApp({ env: { PUBLIC_URL: 'http://signet.example.com' } });
});
after(async () => {
  await t?.close();
});

const PNG = Buffer.from(PNG_DATA_URL.split(',')[1], 'base64');
/** The 1×1 PNG with its IHDR claiming other dimensions: nothing decodes it, so the CRC is never read. */
function pngClaiming(width: number, height: number): Buffer {
  const b = Buffer.from(PNG);
  b.writeUInt32BE(width, 16);
  b.writeUInt32BE(height, 20);
  return b;
}
/** A minimal JPEG header: SOI, then SOF0 declaring 8×8. Enough for the header check. */
const JPEG = Buffer.from([0xff, 0xd8, 0xff, 0xc0, 0x00, 0x0b, 0x08, 0x00, 0x08, 0x00, 0x08, 0x01, 0x01, 0x11, 0x00, 0xff, 0xd9]);

const upload = (bytes: Uint8Array, contentType = 'image/png') => multipart([{ name: 'file', value: bytes, filename: 'logo', contentType }]);
const putLogo = (bytes: Uint8Array, contentType?: string, apiKey = t.customer.apiKey) => {
  const mp = upload(bytes, contentType);
  return t.app.inject({ method: 'PUT', url: '/v1/account/logo', headers: { ...bearer(apiKey), 'content-type': mp.contentType }, payload: mp.body });
};
const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

describe('PUT and DELETE /v1/account/logo', () => {
  test('a PNG is stored content-addressed and shown as logoUrl; GET /v1/account shows it; DELETE clears it; both audited', async () => {
    const c = await t.createCustomer();
    const res = await putLogo(PNG, 'image/png', c.apiKey);
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().logoUrl, `http://signet.example.com/brand/${sha(PNG)}.png`);
    const account = await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) });
    assert.equal(account.json().logoUrl, res.json().logoUrl);
    const gone = await t.app.inject({ method: 'DELETE', url: '/v1/account/logo', headers: bearer(c.apiKey) });
    assert.equal(gone.statusCode, 200, gone.body);
    assert.equal(gone.json().logoUrl, null);
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.customerId, c.id)));
    assert.deepEqual(audit.map((a) => a.action).filter((a) => a.startsWith('account.logo')).sort(), ['account.logo.remove', 'account.logo.set']);
    // Removed from the account, the file still serves the documents that recorded it.
    assert.equal((await t.app.inject({ url: `/brand/${sha(PNG)}.png` })).statusCode, 200);
  });

  test('a JPEG is served as image/jpeg with a .jpg address', async () => {
    const res = await putLogo(JPEG, 'image/jpeg');
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.json().logoUrl, new RegExp(`/brand/${sha(JPEG)}\\.jpg$`));
  });

  test('over 256 KB is 413 PAYLOAD_TOO_LARGE', async () => {
    const big = Buffer.concat([PNG, Buffer.alloc(256 * 1024)]);
    assertError(await putLogo(big), 413, 'PAYLOAD_TOO_LARGE');
  });

  test('not an image, a header claiming 30000×30000 or 2001 pixels wide, or bytes unlike the type are 400 LOGO_INVALID', async () => {
    assert.match(assertError(await putLogo(Buffer.from('just some text, not an image')), 400, 'LOGO_INVALID').error, /not a PNG or JPEG/);
    assert.match(assertError(await putLogo(pngClaiming(30000, 30000)), 400, 'LOGO_INVALID').error, /30000×30000/);
    assert.match(assertError(await putLogo(pngClaiming(2001, 10)), 400, 'LOGO_INVALID').error, /2001×10 pixels; at most 2000/);
    assert.match(assertError(await putLogo(PNG, 'image/jpeg'), 400, 'LOGO_INVALID').error, /are a PNG, but its Content-Type says image\/jpeg/);
  });

  test('another image type is 415; no file part is 400 MISSING_FILE; a JSON body is 415', async () => {
    assertError(await putLogo(PNG, 'image/gif'), 415, 'UNSUPPORTED_MEDIA_TYPE');
    const mp = multipart([{ name: 'other', value: PNG, filename: 'x.png', contentType: 'image/png' }]);
    assertError(await t.app.inject({ method: 'PUT', url: '/v1/account/logo', headers: { ...bearer(t.customer.apiKey), 'content-type': mp.contentType }, payload: mp.body }), 400, 'MISSING_FILE');
    const json = await t.app.inject({ method: 'PUT', url: '/v1/account/logo', headers: bearer(t.customer.apiKey), payload: { file: 'x' } });
    assertError(json, 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('ten uploads a day, then 429 RATE_LIMITED with Retry-After (logos are never deleted: uploads are what fills storage)', async () => {
    const c = await t.createCustomer();
    for (let i = 0; i < 10; i++) assert.equal((await putLogo(PNG, 'image/png', c.apiKey)).statusCode, 200);
    const refused = await putLogo(JPEG, 'image/jpeg', c.apiKey);
    assert.equal(refused.statusCode, 429, refused.body);
    assert.equal(refused.json().code, 'RATE_LIMITED');
    assert.ok(refused.headers['retry-after']);
    assert.match((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().logoUrl, /\.png$/, 'the refused upload changed nothing');
  });

  test("one customer's upload changes only its own account", async () => {
    const a = await t.createCustomer();
    const b = await t.createCustomer();
    assert.equal((await putLogo(PNG, 'image/png', a.apiKey)).statusCode, 200);
    const other = await t.app.inject({ url: '/v1/account', headers: bearer(b.apiKey) });
    assert.equal(other.json().logoUrl, null);
    await t.app.inject({ method: 'DELETE', url: '/v1/account/logo', headers: bearer(b.apiKey) });
    assert.notEqual((await t.app.inject({ url: '/v1/account', headers: bearer(a.apiKey) })).json().logoUrl, null, "b's DELETE leaves a's logo");
  });

  test('the dashboard session may call it with X-CSRF-Token, and is refused without', async () => {
    const c = await t.createCustomer();
    const b = await signInDashboard(t, c.id);
    const mp = upload(PNG);
    const headers = { cookie: b.cookie, 'content-type': mp.contentType };
    assertError(await t.app.inject({ method: 'PUT', url: '/v1/account/logo', headers, payload: mp.body }), 403, 'CSRF_TOKEN_INVALID');
    const ok = await t.app.inject({ method: 'PUT', url: '/v1/account/logo', headers: { ...headers, 'x-csrf-token': b.csrf }, payload: mp.body });
    assert.equal(ok.statusCode, 200, ok.body);
    assertError(await t.app.inject({ method: 'DELETE', url: '/v1/account/logo', headers: { cookie: b.cookie } }), 403, 'CSRF_TOKEN_INVALID');
    assert.equal((await t.app.inject({ method: 'DELETE', url: '/v1/account/logo', headers: { cookie: b.cookie, 'x-csrf-token': b.csrf } })).json().logoUrl, null);
  });
});

describe('/brand/<sha256>.<ext>', () => {
  test('served with its type, a year of immutable caching, nosniff and a CSP of nothing', async () => {
    await putLogo(PNG);
    const res = await t.app.inject({ url: `/brand/${sha(PNG)}.png` });
    assert.equal(res.statusCode, 200);
    assert.equal(res.headers['content-type'], 'image/png');
    assert.match(String(res.headers['cache-control']), /max-age=31536000.*immutable/);
    assert.equal(res.headers['x-content-type-options'], 'nosniff');
    assert.equal(res.headers['content-security-policy'], "default-src 'none'");
    assert.deepEqual(Buffer.from(res.rawPayload), PNG);
  });

  test('an unknown hash, another extension or a path is 404', async () => {
    for (const url of [`/brand/${'0'.repeat(64)}.png`, `/brand/${sha(PNG)}.gif`, `/brand/${sha(PNG)}.jpg`, '/brand/..%2Fdocuments.png', '/brand/x']) {
      assert.equal((await t.app.inject({ url })).statusCode, 404, url);
    }
  });
});

describe('the logo where recipients see it', () => {
  test("the signing page's session names the logo recorded at create, and the invitation's HTML shows it; a later change does not reach it", async () => {
    const c = await t.createCustomer(500);
    await t.app.inject({ method: 'PATCH', url: '/v1/account', headers: bearer(c.apiKey), payload: { displayName: 'Acme Legal' } });
    assert.equal((await putLogo(PNG, 'image/png', c.apiKey)).statusCode, 200);
    const who = person('logo-lee');
    const env = await createEnvelope(t, { recipients: [who] }, { apiKey: c.apiKey });
    await t.app.inject({ method: 'DELETE', url: '/v1/account/logo', headers: bearer(c.apiKey) });
    const s = await session(t, recipientToken(env, who.email));
    assert.equal(s.json().sender.logo, `${sha(PNG)}.png`);
    await drain(t);
    const invitation = (await outbox(t)).find((m) => toOf(m).includes(who.email.toLowerCase()));
    assert.ok(invitation, 'an invitation was sent');
    assert.ok(String(invitation.html).includes(`<img src="http://signet.example.com/brand/${sha(PNG)}.png" alt="Acme Legal"`), String(invitation.html).slice(0, 2000));
    assert.doesNotMatch(String(invitation.text), /brand\//, 'the text part is unchanged');
    // The page itself carries the (hidden) img the script fills, and a base relative to it.
    const page = await t.app.inject({ url: `/sign/${recipientToken(env, who.email)}` });
    assert.match(page.body, /<img id="brand-logo" class="brand-logo" alt="" data-testid="brand-logo" hidden>/);
    assert.match(page.body, /data-brand-base="\.\.\/brand\/"/);
  });

  test('without a logo: none in the session nor the invitation', async () => {
    const c = await t.createCustomer(500);
    const who = person('logo-none');
    const env = await createEnvelope(t, { recipients: [who] }, { apiKey: c.apiKey });
    assert.equal((await session(t, recipientToken(env, who.email))).json().sender.logo, null);
    await drain(t);
    const invitation = (await outbox(t)).find((m) => toOf(m).includes(who.email.toLowerCase()));
    assert.doesNotMatch(String(invitation?.html), /\/brand\//);
  });
});

describe('dashboard settings: the logo forms', () => {
  const post = (url: string, cookie: string, mp: { body: Buffer; contentType: string }) => t.app.inject({ method: 'POST', url, headers: { cookie, 'content-type': mp.contentType }, payload: mp.body });

  test('upload shows the current logo; a refused file is said next to the input; remove clears it', async () => {
    const c = await t.createCustomer();
    const b = await signInDashboard(t, c.id);
    const empty = await t.app.inject({ url: '/dashboard/settings', headers: { cookie: b.cookie } });
    assert.match(empty.body, /data-testid="no-logo"/);
    const withCsrf = (bytes: Uint8Array, type = 'image/png') => multipart([{ name: '_csrf', value: b.csrf }, { name: 'file', value: bytes, filename: 'logo.png', contentType: type }]);
    const ok = await post('/dashboard/settings/logo', b.cookie, withCsrf(PNG));
    assert.equal(ok.statusCode, 303, ok.body);
    const shown = await t.app.inject({ url: '/dashboard/settings?saved=logo', headers: { cookie: b.cookie } });
    assert.ok(shown.body.includes(`<img src="/brand/${sha(PNG)}.png" alt="Your current logo"`), 'the current logo, by path');
    const refused = await post('/dashboard/settings/logo', b.cookie, withCsrf(pngClaiming(30000, 30000)));
    assert.equal(refused.statusCode, 400);
    assert.match(refused.body, /<small id="logo-error" class="field-error" role="alert">The logo is 30000×30000/);
    assert.match(refused.body, /id="logo-file"[^>]*aria-invalid="true"/);
    // Without the form's token: refused, nothing changed.
    const forged = await post('/dashboard/settings/logo', b.cookie, multipart([{ name: 'file', value: JPEG, filename: 'l.jpg', contentType: 'image/jpeg' }]));
    assert.equal(forged.statusCode, 403);
    const removed = await t.app.inject({ method: 'POST', url: '/dashboard/settings/logo/remove', headers: { cookie: b.cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: `_csrf=${encodeURIComponent(b.csrf)}` });
    assert.equal(removed.statusCode, 303);
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().logoUrl, null);
  });
});
