// test-lane: once (dashboard pages over services whose SQL runs on both stores in their modules' own files)
/**
 * The dashboard's settings page through app.inject with a real session: it renders the account's
 * settings (the built-in consent text as placeholder), saves them through the form with its CSRF
 * token, shows refused fields inline with what was typed, and the overview asks for a name while the
 * account keeps its sign-up name.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import { auditLog, customers } from '../src/db/schema/index.js';
import { escapeHtml } from '../src/web/html.js';
import { DEFAULT_CONSENT_TEXT } from '../src/modules/signing/consent-text.js';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { form, signInDashboard, type DashboardBrowser } from './fixtures/dashboard.js';

let t: TestApp;

before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t?.close();
});

async function fresh(): Promise<{ c: TestCustomer; b: DashboardBrowser }> {
  const c = await t.createCustomer();
  return { c, b: await signInDashboard(t, c.id) };
}

const page = (url: string, b: DashboardBrowser) => t.app.inject({ url, headers: { cookie: b.cookie } });
const save = (b: DashboardBrowser, fields: Record<string, string>) => t.app.inject({ method: 'POST', url: '/dashboard/settings', ...form(b, fields) });
const row = async (id: string) => (await t.container.db.select().from(customers).where(eq(customers.id, id)))[0];

describe('dashboard settings', () => {
  test('renders the current settings, with the built-in consent text as placeholder and the nav entry current', async () => {
    const { b } = await fresh();
    const res = await page('/dashboard/settings', b);
    assert.equal(res.statusCode, 200, res.body);
    assert.match(res.body, /<a href="\/dashboard\/settings" aria-current="page">Settings<\/a>/);
    assert.match(res.body, /id="displayName" name="displayName" value="Test Customer"/);
    assert.match(res.body, /id="senderNotifications" name="senderNotifications" value="on" checked/);
    assert.ok(res.body.includes(`placeholder="${escapeHtml(DEFAULT_CONSENT_TEXT)}"`), 'the default text is the placeholder');
    assert.match(res.body, /<textarea id="consentText"[^>]*><\/textarea>/);
    // Without a session: to sign-in, as every page.
    const anon = await t.app.inject({ url: '/dashboard/settings' });
    assert.equal(anon.statusCode, 303);
  });

  test('saves every field through the form, audited as the session; empty fields mean the defaults', async () => {
    const { c, b } = await fresh();
    const res = await save(b, { displayName: 'Acme Legal', notificationEmail: 'legal@acme.example', consentText: 'First paragraph.\r\n\r\nSecond.' });
    assert.equal(res.statusCode, 303, res.body);
    assert.equal(res.headers.location, '/dashboard/settings?saved=1');
    const saved = await row(c.id);
    assert.equal(saved.name, 'Acme Legal');
    assert.equal(saved.notificationEmail, 'legal@acme.example');
    // An unticked switch sends nothing: off.
    assert.equal(saved.senderNotifications, false);
    assert.equal(saved.consentText, 'First paragraph.\n\nSecond.');
    const shown = await page('/dashboard/settings?saved=1', b);
    assert.match(shown.body, /role="status">Settings saved\.</);
    assert.match(shown.body, /value="legal@acme.example"/);
    assert.doesNotMatch(shown.body, /name="senderNotifications" value="on" checked/);
    assert.match(shown.body, /First paragraph\.\n\nSecond\.<\/textarea>/);
    const api = (await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json();
    assert.equal(api.displayName, 'Acme Legal');

    // Back to the defaults: empty address, empty consent text (or the built-in one pasted back), switch on.
    assert.equal((await save(b, { displayName: 'Acme Legal', notificationEmail: '', senderNotifications: 'on', consentText: DEFAULT_CONSENT_TEXT.replace(/\n/g, '\r\n') })).statusCode, 303);
    const reset = await row(c.id);
    assert.equal(reset.notificationEmail, null);
    assert.equal(reset.consentText, null);
    assert.equal(reset.senderNotifications, true);
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.customerId, c.id), eq(auditLog.action, 'account.update')));
    assert.deepEqual(audit.map((a) => a.actorType), ['session', 'session']);
  });

  test('refused fields are shown inline with what was typed, and nothing is saved', async () => {
    const { c, b } = await fresh();
    const res = await save(b, { displayName: '  ', notificationEmail: 'not-an-address', senderNotifications: 'on', consentText: 'x'.repeat(5001) });
    assert.equal(res.statusCode, 400);
    assert.match(res.body, /role="alert"[^>]*><p><strong>Nothing was saved\.<\/strong>/);
    assert.match(res.body, /id="displayName" [^>]*aria-invalid="true" aria-describedby="displayName-error"/);
    assert.match(res.body, /id="displayName-error" class="field-error">Enter a name of 1 to 100 characters/);
    assert.match(res.body, /id="notificationEmail-error" class="field-error">Enter an email address/);
    assert.match(res.body, /value="not-an-address"/);
    assert.match(res.body, /id="consentText-error" class="field-error">Keep the text under 5,000 characters/);
    const unchanged = await row(c.id);
    assert.equal(unchanged.name, 'Test Customer');
    assert.equal(unchanged.notificationEmail, null);
    // The value is escaped back into the form.
    const hostile = await save(b, { displayName: '', notificationEmail: '"><script>x</script>' });
    assert.ok(!hostile.body.includes('<script>x</script>'));
  });

  test('brand colour and allowed origins: saved through the form; a low-contrast colour and a bad origin are refused inline, saying why', async () => {
    const { c, b } = await fresh();
    const bad = await save(b, { displayName: 'Acme', brandColor: '#7fbfff', allowedOrigins: 'https://app.example.com\r\nhttp://evil.example.com' });
    assert.equal(bad.statusCode, 400);
    assert.match(bad.body, /id="brandColor-error" class="field-error">white text on #7fbfff has a contrast of 1\.\d\d:1, below the 4\.5:1/);
    assert.match(bad.body, /id="allowedOrigins-error" class="field-error">http:\/\/evil\.example\.com: an origin must be https/);
    assert.match(bad.body, /value="#7fbfff"/, 'what was typed stays');
    assert.equal((await row(c.id)).brandColor, null);

    const ok = await save(b, { displayName: 'Acme', brandColor: '#0B5D1E', allowedOrigins: 'https://app.example.com\r\n\r\nhttp://localhost:5173' });
    assert.equal(ok.statusCode, 303, ok.body);
    const saved = await row(c.id);
    assert.deepEqual([saved.brandColor, saved.allowedOrigins], ['#0b5d1e', ['https://app.example.com', 'http://localhost:5173']]);
    const shown = await page('/dashboard/settings', b);
    assert.match(shown.body, /id="brandColor" name="brandColor" value="#0b5d1e"/);
    assert.ok(shown.body.includes('>https://app.example.com\nhttp://localhost:5173</textarea>'));
  });

  test('the form needs its CSRF token and a session', async () => {
    const { c, b } = await fresh();
    const other = await signInDashboard(t);
    const forged = await t.app.inject({ method: 'POST', url: '/dashboard/settings', headers: { cookie: b.cookie, 'content-type': 'application/x-www-form-urlencoded' }, payload: `displayName=Forged&_csrf=${other.csrf}` });
    assert.equal(forged.statusCode, 403);
    assert.match(forged.body, /<code>CSRF_TOKEN_INVALID<\/code>/);
    const anon = await t.app.inject({ method: 'POST', url: '/dashboard/settings', headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'displayName=Forged' });
    assert.equal(anon.statusCode, 401);
    assert.equal((await row(c.id)).name, 'Test Customer');
  });

  test('the overview asks for a name while the account keeps its sign-up name (the email\'s local part)', async () => {
    const { c, b } = await fresh();
    assert.doesNotMatch((await page('/dashboard', b)).body, /Set your name as recipients will see it/);
    const { email } = (await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json();
    const local = email.split('@')[0];
    await t.container.db.update(customers).set({ name: local }).where(eq(customers.id, c.id));
    const overview = await page('/dashboard', b);
    assert.match(overview.body, /<h2 id="name-prompt-title">Set your name as recipients will see it<\/h2>/);
    assert.ok(overview.body.includes(`Your invitations now say “${local} asks you to sign”`));
    assert.match(overview.body, /<a href="\/dashboard\/settings">Set your name in settings<\/a>/);
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(c.apiKey) })).json().displayNameIsDefault, true);
    assert.equal((await save(b, { displayName: 'Ada Lovelace', senderNotifications: 'on' })).statusCode, 303);
    assert.doesNotMatch((await page('/dashboard', b)).body, /Set your name as recipients will see it/);
  });
});
