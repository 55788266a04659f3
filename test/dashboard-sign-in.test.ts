/**
 * Dashboard sign-in by emailed link, sign-up, sessions and sign-out, through app.inject against the
 * real database: the mail is read from a capturing email provider (the provider interface), jobs run
 * on the real worker, the clock moves through overrides.clock.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { loadConfig } from '../src/config.js';
import { apiKeys, auditLog, customers, dashboardSessions, dashboardSignIns } from '../src/db/schema/index.js';
import { rowsOf } from '../src/db/client.js';
import { sha256Hex } from '../src/lib/crypto.js';
import { safeReturnTo } from '../src/modules/dashboard/dashboard-http.js';
import { capturingEmail } from './fixtures/dashboard.js';
import { drain } from './fixtures/envelopes.js';
import { createTestApp, type TestApp } from './harness.js';

type Res = { statusCode: number; body: string; headers: Record<string, unknown>; cookies: { name: string; value: string; [k: string]: unknown }[] };

/** A browser in tests: its cookies (by name) and the last form token a page gave it. */
class Browser {
  cookies = new Map<string, string>();
  csrf = '';
  readonly t: TestApp;
  readonly ip: string;
  readonly headers: Record<string, string>;
  constructor(
    t: TestApp,
    ip = '127.0.0.1',
    headers: Record<string, string> = {},
  ) {
    this.t = t;
    this.ip = ip;
    this.headers = headers;
  }

  private keep(res: Res): Res {
    for (const c of res.cookies) {
      if (c.value === '' || (typeof c.maxAge === 'number' && c.maxAge <= 0) || (c.expires instanceof Date && c.expires.getTime() < Date.now())) this.cookies.delete(c.name);
      else this.cookies.set(c.name, c.value);
    }
    const token = /name="_csrf" value="([^"]+)"/.exec(res.body)?.[1];
    if (token) this.csrf = token;
    return res;
  }

  private cookieHeader() {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
  }

  async get(url: string, headers: Record<string, string> = {}): Promise<Res> {
    return this.keep((await this.t.app.inject({ method: 'GET', url, remoteAddress: this.ip, headers: { ...this.headers, cookie: this.cookieHeader(), ...headers } })) as unknown as Res);
  }

  async post(url: string, fields: Record<string, string> = {}, opts: { csrf?: boolean } = {}): Promise<Res> {
    const form = new URLSearchParams({ ...(opts.csrf === false ? {} : { _csrf: this.csrf }), ...fields }).toString();
    return this.keep(
      (await this.t.app.inject({
        method: 'POST',
        url,
        remoteAddress: this.ip,
        headers: { ...this.headers, cookie: this.cookieHeader(), 'content-type': 'application/x-www-form-urlencoded' },
        payload: form,
      })) as unknown as Res,
    );
  }
}

const newAddress = () => `new-${randomBytes(4).toString('hex')}@example.com`;

function assertPage(res: Res, status: number, code?: string) {
  assert.equal(res.statusCode, status, res.body.slice(0, 2000));
  assert.match(String(res.headers['content-type']), /^text\/html/);
  if (code) assert.match(res.body, new RegExp(`<code>${code}</code>`));
}

describe('dashboard sign-in by email link', () => {
  let t: TestApp;
  let offsetMs = 0;
  const email = capturingEmail();

  before(async () => {
    t = await createTestApp({ overrides: { email, clock: () => new Date(Date.now() + offsetMs) } });
  });
  after(async () => t?.close());

  /** Asks for a link from the sign-in form and returns the link the job mailed. */
  async function requestLink(b: Browser, address: string, returnTo?: string): Promise<string> {
    assertPage(await b.get(returnTo ? `/dashboard/sign-in?returnTo=${encodeURIComponent(returnTo)}` : '/dashboard/sign-in'), 200);
    const before = email.sent.length;
    const res = await b.post('/dashboard/sign-in/email', { email: address, ...(returnTo !== undefined && { returnTo }) });
    assertPage(res, 200);
    assert.match(res.body, /Check your email/);
    await drain(t);
    const mail = email.sent.slice(before).find((m) => m.to === address.toLowerCase());
    assert.ok(mail, `no mail to ${address}`);
    const link = new RegExp(`${t.config.dashboardUrl}/sign-in/email/([A-Za-z0-9_-]{43})`).exec(mail.text)?.[0];
    assert.ok(link, mail.text);
    return link.slice(t.config.publicUrl.length);
  }

  /** Opens the link, confirms, and returns the confirm answer (303 and the cookie when it worked). */
  async function confirm(b: Browser, path: string): Promise<Res> {
    const page = await b.get(path);
    assertPage(page, 200);
    return b.post(path);
  }

  /** Signs in and follows the redirect, as a browser does (the page it lands on gives the session's CSRF token). */
  async function signIn(b: Browser, address: string, returnTo?: string): Promise<Res> {
    const res = await confirm(b, await requestLink(b, address, returnTo));
    assert.equal(res.statusCode, 303, res.body);
    await b.get(String(res.headers.location));
    return res;
  }

  const customersWith = (address: string) => t.container.db.select().from(customers).where(sql`lower(${customers.email}) = ${address.toLowerCase()}`);
  const auditOf = (customerId: string) =>
    t.container.db.select({ action: auditLog.action, metadata: auditLog.metadata }).from(auditLog).where(eq(auditLog.customerId, customerId)).orderBy(auditLog.id);

  test('the sign-in page: the email form with its CSRF token, one line on sign-up, no OIDC button', async () => {
    const b = new Browser(t);
    const res = await b.get('/dashboard/sign-in');
    assertPage(res, 200);
    assert.match(res.body, /first sign-in creates your account/);
    assert.match(res.body, /<form method="post" action="\/dashboard\/sign-in\/email"/);
    assert.match(res.body, /<label for="email">/);
    assert.doesNotMatch(res.body, /sign-in\/oidc/);
    assert.ok(b.cookies.get('svc_csrf'), 'the page gives the browser its CSRF cookie');
    // The form's token and the layout's are the same one, made for the cookie this answer sets.
    const meta = /<meta name="csrf-token" content="([^"]+)">/.exec(res.body)?.[1];
    assert.equal(meta, b.csrf);
  });

  test('email sign-in end to end: the first sign-in creates the customer with no API key, the second signs into it', async () => {
    const address = newAddress();
    const b = new Browser(t);
    const mailsBefore = email.sent.length;
    const first = await signIn(b, address);
    assert.equal(first.headers.location, '/dashboard');
    const mail = email.sent[mailsBefore];
    assert.equal(mail.subject, 'Your Signet sign-in link');
    assert.match(mail.text, /expires in 15 minutes/);
    assert.match(mail.text, /works once/);
    assert.match(mail.text, /ignore this email/);
    assert.match(mail.html ?? '', /<a href="http:\/\/signet\.test\/dashboard\/sign-in\/email\/[A-Za-z0-9_-]{43}"/);

    const [customer, ...others] = await customersWith(address);
    assert.equal(others.length, 0);
    assert.equal(customer.email, address);
    assert.equal(customer.name, address.split('@')[0]);
    assert.equal(customer.sandboxLimit, t.config.sandboxLimit);
    assert.equal((await t.container.db.select().from(apiKeys).where(eq(apiKeys.customerId, customer.id))).length, 0, 'no key is minted at sign-up');
    assert.deepEqual((await auditOf(customer.id)).map((a) => [a.action, (a.metadata as { method?: string }).method]), [
      ['customer.sign_up', 'email'],
      ['dashboard.sign_in', 'email'],
    ]);

    // Signed in: the sign-in page sends the browser on, and the overview opens.
    const again = await b.get('/dashboard/sign-in');
    assert.equal(again.statusCode, 303);
    assert.equal(again.headers.location, '/dashboard');
    assertPage(await b.get('/dashboard'), 200);

    const other = new Browser(t);
    await signIn(other, address.toUpperCase());
    assert.equal((await customersWith(address)).length, 1, 'the second sign-in found the same customer');
    assert.deepEqual((await auditOf(customer.id)).map((a) => a.action), ['customer.sign_up', 'dashboard.sign_in', 'dashboard.sign_in']);
    const sessions = await t.container.db.select().from(dashboardSessions).where(eq(dashboardSessions.customerId, customer.id));
    assert.equal(sessions.length, 2);
    assert.ok(sessions.every((s) => s.method === 'email'));
  });

  test("an existing customer's email signs into that customer", async () => {
    const [existing] = await t.container.db.select().from(customers).where(eq(customers.id, t.customer.id));
    const b = new Browser(t);
    await signIn(b, existing.email.toUpperCase());
    const [session] = await t.container.db.select().from(dashboardSessions).where(eq(dashboardSessions.tokenHash, sha256Hex(b.cookies.get('svc_session')!)));
    assert.equal(session.customerId, t.customer.id);
    assert.equal((await customersWith(existing.email)).length, 1);
  });

  test('the link works once: a second confirm (and a second open) is a clear page leading back to sign-in', async () => {
    const b = new Browser(t);
    const path = await requestLink(b, newAddress());
    assert.equal((await confirm(b, path)).statusCode, 303);
    for (const res of [await b.get(path), await new Browser(t).post(path, {}, { csrf: false }), await b.post(path)]) {
      if (res.statusCode === 403) continue; // the browser with no CSRF cookie is refused before the link is looked at
      assertPage(res, 410, 'SIGN_IN_LINK_INVALID');
      assert.match(res.body, /href="\/dashboard\/sign-in"/);
      assert.match(res.body, /This link cannot be used/);
    }
    assertPage(await b.get('/dashboard/sign-in/email/not-a-token'), 410, 'SIGN_IN_LINK_INVALID');
    assertPage(await b.get(`/dashboard/sign-in/email/${'A'.repeat(43)}`), 410, 'SIGN_IN_LINK_INVALID');
  });

  test('two confirms of one link at once: one session, one refusal', async () => {
    const b = new Browser(t);
    const path = await requestLink(b, newAddress());
    assertPage(await b.get(path), 200);
    const results = await Promise.all([b.post(path), b.post(path)]);
    assert.deepEqual(results.map((r) => r.statusCode).sort(), [303, 410]);
  });

  test('two first sign-ins of one address racing make one customer', async () => {
    const address = newAddress();
    const [a, b] = [new Browser(t, '10.9.0.1'), new Browser(t, '10.9.0.2')];
    const [pa, pb] = [await requestLink(a, address), await requestLink(b, address)];
    assertPage(await a.get(pa), 200);
    assertPage(await b.get(pb), 200);
    const results = await Promise.all([a.post(pa), b.post(pb)]);
    assert.deepEqual(results.map((r) => r.statusCode), [303, 303]);
    assert.equal((await customersWith(address)).length, 1);
  });

  test('an expired link (15 minutes) is refused, and its mail is not sent late', async () => {
    const b = new Browser(t);
    const path = await requestLink(b, newAddress());
    assertPage(await b.get(path), 200);
    offsetMs = 15 * 60_000 + 1000;
    try {
      assertPage(await b.get(path), 410, 'SIGN_IN_LINK_INVALID');
      assertPage(await b.post(path), 410, 'SIGN_IN_LINK_INVALID');
      // A link whose job runs after its end mails nothing.
      offsetMs = 0;
      const lb = new Browser(t, '10.7.0.1');
      await lb.get('/dashboard/sign-in');
      const sent = email.sent.length;
      assertPage(await lb.post('/dashboard/sign-in/email', { email: newAddress() }), 200);
      offsetMs = 16 * 60_000;
      await drain(t);
      assert.equal(email.sent.length, sent, 'an expired link is not mailed');
    } finally {
      offsetMs = 0;
    }
  });

  test('rate limits: 5 links per address from one IP and 20 per IP in an hour, as a 429 page with Retry-After', async () => {
    const address = newAddress();
    const requester = new Browser(t, '10.1.0.1');
    await requester.get('/dashboard/sign-in');
    for (let i = 0; i < 5; i++) assertPage(await requester.post('/dashboard/sign-in/email', { email: address }), 200);
    const limited = await requester.post('/dashboard/sign-in/email', { email: address });
    assertPage(limited, 429, 'RATE_LIMITED');
    assert.match(limited.body, /this address from this network/);
    const retryAfter = Number(limited.headers['retry-after']);
    assert.ok(retryAfter > 3500 && retryAfter <= 3600, String(retryAfter));
    // The answer never says whether the address has an account: the limit is the same for any address.
    offsetMs = 3_600_000 + 1000;
    try {
      assertPage(await requester.post('/dashboard/sign-in/email', { email: address }), 200);
    } finally {
      offsetMs = 0;
    }

    const b = new Browser(t, '10.2.0.1');
    await b.get('/dashboard/sign-in');
    for (let i = 0; i < 20; i++) assertPage(await b.post('/dashboard/sign-in/email', { email: newAddress() }), 200);
    const ipLimited = await b.post('/dashboard/sign-in/email', { email: newAddress() });
    assertPage(ipLimited, 429, 'RATE_LIMITED');
    assert.match(ipLimited.body, /from this network/);
    assert.ok(Number(ipLimited.headers['retry-after']) > 0);
    const elsewhere = new Browser(t, '10.2.0.2');
    await elsewhere.get('/dashboard/sign-in');
    assertPage(await elsewhere.post('/dashboard/sign-in/email', { email: newAddress() }), 200);
  });

  test("a stranger cannot lock an address out: another network's requests count apart, and links already sent stay valid", async () => {
    const address = newAddress();
    const owner = new Browser(t, '10.1.1.1');
    const sentBefore = await requestLink(owner, address);
    const stranger = new Browser(t, '10.1.1.2');
    await stranger.get('/dashboard/sign-in');
    for (let i = 0; i < 5; i++) assertPage(await stranger.post('/dashboard/sign-in/email', { email: address }), 200);
    assertPage(await stranger.post('/dashboard/sign-in/email', { email: address }), 429, 'RATE_LIMITED');
    // The owner still gets a link, and the one mailed before the stranger's requests still signs in.
    const sentAfter = await requestLink(owner, address);
    assert.equal((await confirm(owner, sentBefore)).statusCode, 303);
    assert.equal((await confirm(new Browser(t, '10.1.1.1'), sentAfter)).statusCode, 303);
  });

  test('a malformed address gets the form again with the reason, and nothing is stored', async () => {
    const b = new Browser(t, '10.3.0.1');
    await b.get('/dashboard/sign-in');
    const res = await b.post('/dashboard/sign-in/email', { email: 'not an address<script>' });
    assertPage(res, 400);
    assert.match(res.body, /aria-invalid="true"/);
    assert.match(res.body, /value="not an address&lt;script&gt;"/);
    const rows = await t.container.db.select().from(dashboardSignIns).where(eq(dashboardSignIns.ip, '10.3.0.1'));
    assert.equal(rows.length, 0);
  });

  test('CSRF: a form posted without the token is refused (403 CSRF_TOKEN_INVALID)', async () => {
    const b = new Browser(t);
    await b.get('/dashboard/sign-in');
    assertPage(await b.post('/dashboard/sign-in/email', { email: newAddress() }, { csrf: false }), 403, 'CSRF_TOKEN_INVALID');
    assertPage(await b.post('/dashboard/sign-in/email', { email: newAddress(), _csrf: 'forged' }, { csrf: false }), 403, 'CSRF_TOKEN_INVALID');
    const path = await requestLink(b, newAddress());
    assertPage(await b.get(path), 200);
    assertPage(await b.post(path, {}, { csrf: false }), 403, 'CSRF_TOKEN_INVALID');
    // The link survives the refused post.
    assert.equal((await b.post(path)).statusCode, 303);
    assertPage(await b.post('/dashboard/sign-out', {}, { csrf: false }), 403, 'CSRF_TOKEN_INVALID');
    assert.equal((await b.get('/dashboard/sign-in')).statusCode, 303, 'still signed in');
  });

  test('CSRF: sign-in gives a new key, a token from before it is refused after it, and a token works only with the session it was made for', async () => {
    const b = new Browser(t, '10.8.0.1');
    await b.get('/dashboard/sign-in');
    const before = { key: b.cookies.get('svc_csrf')!, token: b.csrf };
    await signIn(b, newAddress());
    assert.notEqual(b.cookies.get('svc_csrf'), before.key, 'sign-in rotates the CSRF key');
    const now = { key: b.cookies.get('svc_csrf')!, session: b.cookies.get('svc_session')! };

    // The key and token of before sign-in (kept by the browser, or planted in it): refused.
    b.cookies.set('svc_csrf', before.key);
    b.csrf = before.token;
    assertPage(await b.post('/dashboard/sign-out'), 403, 'CSRF_TOKEN_INVALID');
    // Another browser's key and token, planted next to this session (a sibling host can set cookies): refused.
    const attacker = new Browser(t, '10.8.0.2');
    await signIn(attacker, newAddress());
    await attacker.get('/dashboard');
    b.cookies.set('svc_csrf', attacker.cookies.get('svc_csrf')!);
    b.csrf = attacker.csrf;
    assertPage(await b.post('/dashboard/sign-out'), 403, 'CSRF_TOKEN_INVALID');
    const products = await t.app.inject({ method: 'POST', url: `/v1/account/products/${t.config.productId}/enable`, headers: { cookie: `svc_session=${now.session}; svc_csrf=${b.cookies.get('svc_csrf')}`, 'x-csrf-token': attacker.csrf } });
    assert.equal(products.statusCode, 403, products.body);
    assert.equal((await b.get('/dashboard/sign-in')).statusCode, 303, 'still signed in');

    // The page's own token, for this key and this session, works.
    b.cookies.set('svc_csrf', now.key);
    await b.get('/dashboard');
    assert.equal((await b.post('/dashboard/sign-out')).statusCode, 303);
  });

  test('the session cookie: HttpOnly, SameSite=Lax, Path=/, host-only, 24 h, not Secure over plain http', async () => {
    const res = await signIn(new Browser(t), newAddress());
    const raw = [res.headers['set-cookie']].flat().find((c) => String(c).startsWith('svc_session=')) as string;
    assert.ok(raw, 'svc_session set');
    assert.match(raw, /; HttpOnly/);
    assert.match(raw, /; SameSite=Lax/);
    assert.match(raw, /; Path=\/(;|$)/);
    assert.match(raw, /; Max-Age=86400/);
    assert.doesNotMatch(raw, /Domain=/i);
    assert.doesNotMatch(raw, /Secure/);
  });

  test('sign-out revokes the row, clears the cookie, and the old cookie is sent to sign in', async () => {
    const b = new Browser(t);
    await signIn(b, newAddress());
    const token = b.cookies.get('svc_session')!;
    const out = await b.post('/dashboard/sign-out');
    assert.equal(out.statusCode, 303);
    assert.equal(out.headers.location, '/dashboard/sign-in');
    const cleared = [out.headers['set-cookie']].flat().find((c) => String(c).startsWith('svc_session=')) as string;
    assert.match(cleared, /^svc_session=;/);
    assert.match(cleared, /Expires=Thu, 01 Jan 1970/);
    const [row] = await t.container.db.select().from(dashboardSessions).where(eq(dashboardSessions.tokenHash, sha256Hex(token)));
    assert.ok(row.revokedAt, 'the row is revoked');
    const [audit] = await t.container.db.select().from(auditLog).where(and(eq(auditLog.action, 'dashboard.sign_out'), eq(auditLog.resourceId, row.id)));
    assert.equal(audit.customerId, row.customerId);

    // A copy of the old cookie opens nothing.
    const copy = new Browser(t);
    copy.cookies.set('svc_session', token);
    const page = await copy.get('/dashboard');
    assert.equal(page.statusCode, 303);
    assert.equal(page.headers.location, '/dashboard/sign-in?returnTo=%2Fdashboard');
    assertPage(await copy.get('/dashboard/sign-in'), 200);
    // Signing out again (a stale tab) still lands on the sign-in page.
    await copy.get('/dashboard/sign-in');
    assert.equal((await copy.post('/dashboard/sign-out')).statusCode, 303);
  });

  test('sessions end after 2 h idle, and after 24 h whatever the activity', async () => {
    try {
      const idle = new Browser(t);
      await signIn(idle, newAddress());
      offsetMs = 2 * 3_600_000 - 60_000;
      assert.equal((await idle.get('/dashboard')).statusCode, 200, 'just under 2 h idle');
      offsetMs += 2 * 3_600_000 - 1000;
      assert.equal((await idle.get('/dashboard')).statusCode, 200, 'the last request counted as activity');
      offsetMs += 2 * 3_600_000;
      assert.equal((await idle.get('/dashboard')).statusCode, 303, 'idle 2 h: ended');

      offsetMs = 0;
      const busy = new Browser(t);
      await signIn(busy, newAddress());
      for (let h = 1; h < 24; h++) {
        offsetMs = h * 3_600_000;
        assert.equal((await busy.get('/dashboard')).statusCode, 200, `active at hour ${h}`);
      }
      offsetMs = 24 * 3_600_000 + 1000;
      const ended = await busy.get('/dashboard');
      assert.equal(ended.statusCode, 303, 'past 24 h: ended');
      assert.match(String(ended.headers.location), /^\/dashboard\/sign-in/);
    } finally {
      offsetMs = 0;
    }
  });

  test('no open redirect: returnTo outside the dashboard lands on /dashboard', async () => {
    const bad = ['https://evil.example', '//evil.example', '/dashboard/../x', '/dashboard/%2e%2e/x', '/\\evil.example', '/dashboard//evil.example', 'javascript:alert(1)', '/dashboardx'];
    for (const returnTo of bad) {
      const res = await signIn(new Browser(t, '10.4.0.1'), newAddress(), returnTo);
      assert.equal(res.headers.location, '/dashboard', returnTo);
    }
    const good = await signIn(new Browser(t, '10.4.0.2'), newAddress(), '/dashboard/keys?mode=test');
    assert.equal(good.headers.location, '/dashboard/keys?mode=test');
    const signedIn = new Browser(t, '10.4.0.3');
    await signIn(signedIn, newAddress());
    for (const returnTo of bad) assert.equal((await signedIn.get(`/dashboard/sign-in?returnTo=${encodeURIComponent(returnTo)}`)).headers.location, '/dashboard', returnTo);
  });

  test('returnTo beyond ASCII is percent-encoded, control characters fall back to /dashboard: never a 500 after the link is spent', async () => {
    // A Location header takes no character above U+00FF: written raw, the redirect threw after the commit.
    const res = await signIn(new Browser(t, '10.4.1.1'), newAddress(), '/dashboard/Āx?q=Zürich€');
    assert.equal(res.headers.location, '/dashboard/%C4%80x?q=Z%C3%BCrich%E2%82%AC');
    assert.ok(res.cookies.some((c) => c.name === 'svc_session'), 'signed in');
    const control = await signIn(new Browser(t, '10.4.1.2'), newAddress(), '/dashboard/keys\u0001');
    assert.equal(control.headers.location, '/dashboard');
    const signedIn = new Browser(t, '10.4.1.3');
    await signIn(signedIn, newAddress());
    const again = await signedIn.get('/dashboard/sign-in?returnTo=/dashboard/%C4%80');
    assert.equal(again.statusCode, 303);
    assert.equal(again.headers.location, '/dashboard/%C4%80');
    // No form or URL delivers a lone surrogate (they arrive as U+FFFD), but no URL could carry one either.
    assert.equal(safeReturnTo('/dashboard/\ud800'), '/dashboard');
  });

  test('the cookie on /v1: the products routes take it (a mutation needs X-CSRF-Token), /v1/account refuses it', async () => {
    const b = new Browser(t);
    await signIn(b, newAddress());
    const cookie = [...b.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    const list = await t.app.inject({ method: 'GET', url: '/v1/account/products', headers: { cookie } });
    assert.equal(list.statusCode, 200, list.body);
    const url = `/v1/account/products/${t.config.productId}/enable`;
    const refused = await t.app.inject({ method: 'POST', url, headers: { cookie } });
    assert.equal(refused.statusCode, 403, refused.body);
    assert.equal(refused.json().code, 'CSRF_TOKEN_INVALID');
    const csrf = /<meta name="csrf-token" content="([^"]+)">/.exec((await b.get('/dashboard')).body)?.[1];
    const enabled = await t.app.inject({ method: 'POST', url, headers: { cookie, 'x-csrf-token': csrf! } });
    assert.equal(enabled.statusCode, 200, enabled.body);
    assert.equal(enabled.json().enabled, true);
    const account = await t.app.inject({ method: 'GET', url: '/v1/account', headers: { cookie } });
    assert.equal(account.statusCode, 401, account.body);
  });

  test('housekeeping deletes attempts older than a day and sessions ended over a week ago', async () => {
    const b = new Browser(t, '10.5.0.1');
    await signIn(b, newAddress());
    const token = b.cookies.get('svc_session')!;
    await b.post('/dashboard/sign-out');
    const live = new Browser(t, '10.5.0.2');
    await signIn(live, newAddress());
    const count = async () => {
      const [row] = rowsOf<{ s: string | number; i: string | number }>(
        await t.container.db.execute(sql`SELECT (SELECT count(*) FROM dashboard_sign_ins WHERE ip IN ('10.5.0.1', '10.5.0.2')) AS i, (SELECT count(*) FROM dashboard_sessions WHERE token_hash IN (${sha256Hex(token)}, ${sha256Hex(live.cookies.get('svc_session')!)})) AS s`),
      );
      return { signIns: Number(row.i), sessions: Number(row.s) };
    };
    await t.container.db.transaction((tx) => t.container.dashboard.signIn.purge(tx));
    assert.deepEqual(await count(), { signIns: 2, sessions: 2 }, 'nothing young is deleted');
    try {
      offsetMs = 25 * 3_600_000;
      await t.container.db.transaction((tx) => t.container.dashboard.signIn.purge(tx));
      assert.deepEqual(await count(), { signIns: 0, sessions: 2 }, 'attempts go after a day');
      offsetMs = 8 * 24 * 3_600_000;
      await t.container.db.transaction((tx) => t.container.dashboard.signIn.purge(tx));
      assert.deepEqual(await count(), { signIns: 0, sessions: 0 }, 'both sessions ended (signed out; past 24 h) over a week ago');
    } finally {
      offsetMs = 0;
    }
  });
});

describe('the session cookie is Secure when the dashboard is reached over https', () => {
  async function cookieOf(env: Record<string, string>, headers: Record<string, string> = {}): Promise<string> {
    const email = capturingEmail();
    const t = await createTestApp({ env, overrides: { email } });
    try {
      const b = new Browser(t, '127.0.0.1', headers);
      await b.get('/dashboard/sign-in');
      await b.post('/dashboard/sign-in/email', { email: newAddress() });
      await drain(t);
      const path = new URL(/https?:\/\/\S+\/sign-in\/email\/[A-Za-z0-9_-]{43}/.exec(email.sent[0].text)![0]).pathname;
      await b.get(path);
      const res = await b.post(path);
      assert.equal(res.statusCode, 303, res.body);
      return [res.headers['set-cookie']].flat().find((c) => String(c).startsWith('svc_session=')) as string;
    } finally {
      await t.close();
    }
  }

  test('PUBLIC_URL https → Secure', async () => {
    assert.match(await cookieOf({ PUBLIC_URL: 'https://signet.example' }), /; Secure/);
  });
  test('DASHBOARD_URL https → Secure', async () => {
    assert.match(await cookieOf({ DASHBOARD_URL: 'https://app.signet.example/dashboard' }), /; Secure/);
  });
  test('X-Forwarded-Proto: https counts only with TRUST_PROXY', async () => {
    assert.match(await cookieOf({ TRUST_PROXY: '127.0.0.1' }, { 'x-forwarded-proto': 'https' }), /; Secure/);
    assert.doesNotMatch(await cookieOf({}, { 'x-forwarded-proto': 'https' }), /Secure/);
  });

  test('over https the CSRF key is the __Host- cookie, and a plain svc_csrf (which a sibling host could set) is not read', async () => {
    const t = await createTestApp({ env: { PUBLIC_URL: 'https://signet.example' }, overrides: { email: capturingEmail() } });
    try {
      const b = new Browser(t);
      const page = await b.get('/dashboard/sign-in');
      const raw = [page.headers['set-cookie']].flat().map(String);
      const set = raw.find((c) => c.startsWith('__Host-svc_csrf='));
      assert.ok(set, raw.join('\n'));
      assert.match(set, /; Path=\/(;|$)/);
      assert.match(set, /; Secure/);
      assert.doesNotMatch(set, /Domain=/i);
      assert.equal(raw.some((c) => c.startsWith('svc_csrf=')), false);
      const key = b.cookies.get('__Host-svc_csrf')!;
      b.cookies.delete('__Host-svc_csrf');
      b.cookies.set('svc_csrf', key);
      assertPage(await b.post('/dashboard/sign-in/email', { email: newAddress() }), 403, 'CSRF_TOKEN_INVALID');
      b.cookies.set('__Host-svc_csrf', key);
      assertPage(await b.post('/dashboard/sign-in/email', { email: newAddress() }), 200);
    } finally {
      await t.close();
    }
  });
});

describe('dashboard sign-in with OpenID Connect configured', () => {
  let t: TestApp;
  before(async () => {
    // Nothing listens on port 9 of this machine: the provider is unreachable.
    t = await createTestApp({ env: { OIDC_ISSUER: 'http://127.0.0.1:9', OIDC_CLIENT_ID: 'signet', OIDC_CLIENT_SECRET: 'secret', OIDC_PROVIDER_NAME: 'Acme SSO' } });
  });
  after(async () => t?.close());

  test('the sign-in page offers the provider only; the email routes do not exist', async () => {
    const b = new Browser(t);
    const res = await b.get('/dashboard/sign-in?returnTo=%2Fdashboard%2Fkeys');
    assertPage(res, 200);
    assert.match(res.body, /<a href="\/dashboard\/sign-in\/oidc\?returnTo=%2Fdashboard%2Fkeys" role="button"[^>]*>Sign in with Acme SSO<\/a>/);
    assert.doesNotMatch(res.body, /sign-in\/email/);
    // No route: the app's own answer (not a page, not a link).
    assert.ok([404, 415].includes((await b.post('/dashboard/sign-in/email', { email: newAddress() })).statusCode));
    assert.equal((await t.container.db.select().from(dashboardSignIns)).length, 0);
  });

  test('an unreachable provider is a 503 page, and nothing is stored', async () => {
    const b = new Browser(t, '10.6.0.1');
    const res = await b.get('/dashboard/sign-in/oidc');
    assertPage(res, 503, 'SIGN_IN_PROVIDER_UNAVAILABLE');
    assert.match(res.body, /href="\/dashboard\/sign-in"/);
    assert.equal(b.cookies.has('svc_oidc_flow'), false);
    assert.equal((await t.container.db.select().from(dashboardSignIns).where(eq(dashboardSignIns.ip, '10.6.0.1'))).length, 0);
  });

  test('a callback without a flow cookie (another browser) is refused', async () => {
    const res = await new Browser(t).get('/dashboard/auth/callback?code=abc&state=xyz');
    assertPage(res, 400, 'SIGN_IN_FLOW_INVALID');
  });
});

describe('OIDC configuration', () => {
  const base = { DATA_DIR: 'memory://', OPS_TOKEN: 'o'.repeat(20), JWT_SECRET: 'j'.repeat(40), SIGNING_LINK_SECRET: 's'.repeat(40) };
  test('all three or none; https unless the issuer is on this machine', () => {
    assert.equal(loadConfig(base).oidc, undefined);
    assert.throws(() => loadConfig({ ...base, OIDC_ISSUER: 'https://id.example' }), /OIDC_CLIENT_ID: required/);
    assert.throws(() => loadConfig({ ...base, OIDC_CLIENT_SECRET: 'x', OIDC_CLIENT_ID: 'y' }), /OIDC_ISSUER: required/);
    assert.throws(() => loadConfig({ ...base, OIDC_PROVIDER_NAME: 'Acme' }), /OIDC_PROVIDER_NAME: requires/);
    const full = { ...base, OIDC_CLIENT_ID: 'signet', OIDC_CLIENT_SECRET: 'secret' };
    assert.throws(() => loadConfig({ ...full, OIDC_ISSUER: 'http://id.example' }), /OIDC_ISSUER: must be https/);
    assert.throws(() => loadConfig({ ...full, OIDC_ISSUER: 'ftp://id.example' }), /OIDC_ISSUER/);
    for (const issuer of ['http://localhost:4000', 'http://127.0.0.1:4000', 'http://[::1]:4000', 'https://id.example/realms/a/']) {
      assert.equal(loadConfig({ ...full, OIDC_ISSUER: issuer }).oidc?.issuer, issuer);
    }
    assert.equal(loadConfig({ ...full, OIDC_ISSUER: 'https://id.example' }).oidc?.providerName, 'id.example');
  });
});
