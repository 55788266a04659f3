/**
 * Identity verifications of type email, end to end through the HTTP routes, the /verify page's JSON
 * routes, the send-code job and a real SMTP server: one charge per create, idempotent replays, tenant
 * and test-mode isolation, bad input, wrong codes and the lockout, code replacement and rate limits,
 * expiry with an injected clock (on read, by the sweep, and on the live status route), cancel, and the
 * primitives gated signing calls.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { and, eq } from 'drizzle-orm';
import type { ParsedMail } from 'mailparser';
import type { RequestContext } from '../src/context.js';
import { auditLog, verifications } from '../src/db/schema/index.js';
import { AppError } from '../src/errors.js';
import { bearer, createTestApp, type TestApp, type TestCustomer } from './harness.js';
import { account, assertError, drain, ledger, outbox, toOf, uniq } from './fixtures/envelopes.js';
import { startSmtpServer, type TestSmtpServer } from './fixtures/smtp.js';

let t: TestApp;
let smtp: TestSmtpServer;
/** The app's clock runs this far ahead of the wall clock (expiry, code lifetimes, resend waits). */
let offsetMs = 0;
const advance = (ms: number) => void (offsetMs += ms);

before(async () => {
  smtp = await startSmtpServer();
  t = await createTestApp({ creditCents: 100_000, env: { SMTP_URL: smtp.url }, overrides: { clock: () => new Date(Date.now() + offsetMs) } });
});
after(async () => {
  await t?.close();
  await smtp?.close();
});

type Verification = { verificationId: string; status: string; verificationUrl: string | null; attemptsLeft: number | null; [k: string]: unknown };

let keys = 0;
const create = (body: unknown, opts: { apiKey?: string; key?: string } = {}) =>
  t.app.inject({
    method: 'POST',
    url: '/v1/verifications',
    headers: { ...bearer(opts.apiKey ?? t.customer.apiKey), 'idempotency-key': opts.key ?? `v-${++keys}-${randomUUID()}`, 'content-type': 'application/json' },
    payload: typeof body === 'string' ? body : JSON.stringify(body),
  });

async function newVerification(extra: Record<string, unknown> = {}, apiKey?: string): Promise<Verification & { email: string; token: string }> {
  const email = uniq('person');
  const res = await create({ type: 'email', email, name: 'Pat Person', ...extra }, { apiKey });
  assert.equal(res.statusCode, 201, res.body);
  const v = res.json() as Verification;
  return { ...v, email, token: new URL(v.verificationUrl!).pathname.split('/').pop()! };
}

const get = (id: string, apiKey = t.customer.apiKey, suffix = '') => t.app.inject({ url: `/v1/verifications/${id}${suffix}`, headers: bearer(apiKey) });
const requestCode = (token: string) => t.app.inject({ method: 'POST', url: `/verify/${token}/code` });
const confirm = (token: string, code: string) => t.app.inject({ method: 'POST', url: `/verify/${token}/confirm`, headers: { 'content-type': 'application/json' }, payload: JSON.stringify({ code }) });
const codeOf = (mail: ParsedMail) => /verification code is (\d{6})\b/.exec(mail.text ?? '')?.[1];
const wrongCode = (right: string) => String((Number(right) + 1) % 1_000_000).padStart(6, '0');

/** Asks for a code, runs the send-code job, and reads the code from the mail the SMTP server received. */
async function codeByMail(token: string, email: string): Promise<{ code: string; mail: ParsedMail }> {
  const before = smtp.messages.length;
  const res = await requestCode(token);
  assert.equal(res.statusCode, 200, res.body);
  await drain(t);
  const mail = await smtp.waitFor((m) => smtp.messages.indexOf(m) >= before && toOf(m).includes(email));
  const code = codeOf(mail);
  assert.ok(code, mail.text);
  return { code, mail };
}

const row = async (id: string) => (await t.container.db.select().from(verifications).where(eq(verifications.id, id)))[0];

describe('POST /v1/verifications', () => {
  test('creates a pending email verification for USD 0.50, charged once, with a /verify link', async () => {
    const before = await account(t);
    const res = await create({ type: 'email', email: 'ann@example.com', name: 'Ann Example', redirectUrl: 'https://app.example.com/done', metadata: { userId: 'u-1', plan: 'pro' } });
    assert.equal(res.statusCode, 201, res.body);
    const v = res.json();
    assert.match(v.verificationId, /^[0-9a-f-]{36}$/);
    assert.equal(v.type, 'email');
    assert.equal(v.provider, 'email');
    assert.equal(v.status, 'pending');
    assert.equal(v.email, 'ann@example.com');
    assert.equal(v.name, 'Ann Example');
    assert.equal(v.redirectUrl, 'https://app.example.com/done');
    assert.deepEqual(v.metadata, { userId: 'u-1', plan: 'pro' });
    assert.equal(v.attemptsLeft, 5);
    assert.equal(v.envelopeId, null);
    assert.equal(v.verifiedAt, null);
    assert.match(v.verificationUrl, /^http:\/\/signet\.test\/verify\/[A-Za-z0-9_-]{43}$/);
    const lifetime = Date.parse(v.expiresAt) - Date.parse(v.createdAt);
    assert.ok(Math.abs(lifetime - 24 * 3_600_000) < 60_000, `expires 24 h after creation, got ${lifetime} ms`);

    assert.equal((await account(t)).creditsCents, before.creditsCents - 50);
    const debits = (await ledger(t, t.customer.id)).filter((e) => e.operation === 'verification_create');
    assert.equal(debits.length, 1);
    assert.equal(debits[0].amountMicros, 500_000n);
    assert.equal(debits[0].direction, 'debit');
    // The stored row keeps the link salt and the token's hash, never the token.
    const stored = await row(v.verificationId);
    assert.equal(stored.chargedMicros, 500_000n);
    assert.ok(stored.linkSalt && stored.tokenHash);
    assert.ok(!JSON.stringify(stored, (_k, x) => (typeof x === 'bigint' ? String(x) : x)).includes(new URL(v.verificationUrl).pathname.split('/').pop()!));
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, v.verificationId), eq(auditLog.action, 'verification.create')));
    assert.equal(audit.length, 1);
  });

  test('a replay with the same Idempotency-Key answers the same verification and charges once', async () => {
    const body = { type: 'email', email: 'replay@example.com' };
    const first = await create(body, { key: 'replay-key-1' });
    const second = await create(body, { key: 'replay-key-1' });
    assert.equal(first.statusCode, 201);
    assert.equal(second.statusCode, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.json().verificationId, first.json().verificationId);
    const rows = await t.container.db.select().from(verifications).where(eq(verifications.email, 'replay@example.com'));
    assert.equal(rows.length, 1);
    const debits = (await ledger(t, t.customer.id)).filter((e) => e.operation === 'verification_create' && e.description.includes('replay@example.com'));
    assert.equal(debits.length, 1);
    assertError(await create({ type: 'email', email: 'other@example.com' }, { key: 'replay-key-1' }), 422, 'IDEMPOTENCY_KEY_REUSED');
  });

  test('a balance below USD 0.50 is 402 INSUFFICIENT_BALANCE and stores nothing', async () => {
    const poor = await t.createCustomer(40);
    const body = assertError(await create({ type: 'email', email: 'poor@example.com' }, { apiKey: poor.apiKey }), 402, 'INSUFFICIENT_BALANCE');
    assert.equal(body.priceUsd, '0.50');
    const list = await t.app.inject({ url: '/v1/verifications', headers: bearer(poor.apiKey) });
    assert.equal(list.json().total, 0);
    assert.equal((await ledger(t, poor.id)).filter((e) => e.direction === 'debit').length, 0);
  });

  test('without Stripe configured, id_document is 400 ID_VERIFICATION_NOT_CONFIGURED and free', async () => {
    const before = await account(t);
    assertError(await create({ type: 'id_document', email: 'doc@example.com' }), 400, 'ID_VERIFICATION_NOT_CONFIGURED');
    assert.equal((await account(t)).creditsCents, before.creditsCents);
  });

  test('bad input is 400 with its code', async () => {
    const cases: [unknown, string][] = [
      [{ type: 'phone', email: 'a@example.com' }, 'VALIDATION_ERROR'],
      [{ type: 'email' }, 'VALIDATION_ERROR'],
      [{ type: 'email', email: 'not-an-email' }, 'VALIDATION_ERROR'],
      [{ type: 'email', email: `${'a'.repeat(250)}@example.com` }, 'VALIDATION_ERROR'],
      [{ type: 'email', email: 'a@example.com', name: 'x'.repeat(201) }, 'VALIDATION_ERROR'],
      [{ type: 'email', email: 'a@example.com', redirectUrl: 'javascript:alert(1)' }, 'VALIDATION_ERROR'],
      [{ type: 'email', email: 'a@example.com', redirectUrl: 'ftp://example.com/x' }, 'VALIDATION_ERROR'],
      [{ type: 'email', email: 'a@example.com', metadata: Object.fromEntries(Array.from({ length: 21 }, (_, i) => [`k${i}`, 'v'])) }, 'VALIDATION_ERROR'],
      [{ type: 'email', email: 'a@example.com', metadata: { k: 'v'.repeat(501) } }, 'VALIDATION_ERROR'],
      [{ type: 'email', email: 'a@example.com', metadata: { 'a key': 'v' } }, 'VALIDATION_ERROR'],
      [{ type: 'email', email: 'a@example.com', metadata: { k: 1 } }, 'VALIDATION_ERROR'],
      ['{"type": "email", ', 'INVALID_JSON'],
    ];
    for (const [body, code] of cases) assertError(await create(body), 400, code);
    const noKey = await t.app.inject({ method: 'POST', url: '/v1/verifications', headers: bearer(t.customer.apiKey), payload: { type: 'email', email: 'a@example.com' } });
    assertError(noKey, 400, 'IDEMPOTENCY_KEY_REQUIRED');
    // Twenty keys are fine.
    assert.equal((await create({ type: 'email', email: 'meta@example.com', metadata: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`k${i}`, 'v'.repeat(500)])) })).statusCode, 201);
  });
});

describe('reading verifications', () => {
  test('another customer, a test key and a malformed id all get 404 VERIFICATION_NOT_FOUND', async () => {
    const v = await newVerification();
    const other = await t.createCustomer(500);
    for (const suffix of ['', '/status']) {
      assertError(await get(v.verificationId, other.apiKey, suffix), 404, 'VERIFICATION_NOT_FOUND');
      assertError(await get(v.verificationId, t.customer.testApiKey, suffix), 404, 'VERIFICATION_NOT_FOUND');
      assertError(await get('not-a-uuid', t.customer.apiKey, suffix), 404, 'VERIFICATION_NOT_FOUND');
    }
    assertError(await t.app.inject({ method: 'POST', url: `/v1/verifications/${v.verificationId}/cancel`, headers: bearer(other.apiKey) }), 404, 'VERIFICATION_NOT_FOUND');
    assert.equal((await get(v.verificationId)).json().status, 'pending');
  });

  test('a test key is sandboxed: no charge, its own list, and its codes go to the outbox only', async () => {
    const fresh: TestCustomer = await t.createCustomer(500);
    const v = await newVerification({}, fresh.testApiKey);
    const acct = await account(t, fresh.apiKey);
    assert.equal(acct.creditsCents, 500);
    assert.equal(acct.sandboxUsed, 1);
    assert.equal((await t.app.inject({ url: '/v1/verifications', headers: bearer(fresh.apiKey) })).json().total, 0);
    assert.equal((await t.app.inject({ url: '/v1/verifications', headers: bearer(fresh.testApiKey) })).json().total, 1);
    assert.equal((await get(v.verificationId, fresh.testApiKey)).statusCode, 200);
    assertError(await get(v.verificationId, fresh.apiKey), 404, 'VERIFICATION_NOT_FOUND');

    const smtpBefore = smtp.messages.length;
    assert.equal((await requestCode(v.token)).statusCode, 200);
    await drain(t);
    assert.equal(smtp.messages.slice(smtpBefore).filter((m) => toOf(m).includes(v.email)).length, 0, 'no real mail in test mode');
    const mail = (await outbox(t)).find((m) => toOf(m).includes(v.email));
    assert.ok(mail && codeOf(mail), 'the code is in the outbox');
  });

  test('the list is newest first, pages both ways, and filters by status', async () => {
    const c = await t.createCustomer(500);
    const made: Verification[] = [];
    for (let i = 0; i < 3; i++) made.push(await newVerification({}, c.apiKey));
    const cancel = await t.app.inject({ method: 'POST', url: `/v1/verifications/${made[0].verificationId}/cancel`, headers: bearer(c.apiKey) });
    assert.equal(cancel.statusCode, 200, cancel.body);

    const all = (await t.app.inject({ url: '/v1/verifications', headers: bearer(c.apiKey) })).json();
    assert.equal(all.total, 3);
    assert.deepEqual(all.data.map((v: Verification) => v.verificationId), made.map((v) => v.verificationId).reverse());
    assert.equal(all.limit, 20);
    const paged = (await t.app.inject({ url: '/v1/verifications?limit=1&offset=1', headers: bearer(c.apiKey) })).json();
    assert.deepEqual([paged.data.length, paged.data[0].verificationId, paged.total], [1, made[1].verificationId, 3]);
    const alt = (await t.app.inject({ url: '/v1/verifications?page=2&perPage=2', headers: bearer(c.apiKey) })).json();
    assert.deepEqual([alt.page, alt.perPage, alt.data.length, alt.data[0].verificationId], [2, 2, 1, made[0].verificationId]);
    const canceled = (await t.app.inject({ url: '/v1/verifications?status=canceled', headers: bearer(c.apiKey) })).json();
    assert.deepEqual(canceled.data.map((v: Verification) => v.verificationId), [made[0].verificationId]);
    assert.equal((await t.app.inject({ url: '/v1/verifications?status=pending', headers: bearer(c.apiKey) })).json().total, 2);
    assertError(await t.app.inject({ url: '/v1/verifications?status=done', headers: bearer(c.apiKey) }), 400, 'VALIDATION_ERROR');
    assertError(await t.app.inject({ url: '/v1/verifications?limit=101', headers: bearer(c.apiKey) }), 400, 'VALIDATION_ERROR');
  });
});

describe('the emailed code', () => {
  test('arrives by SMTP; a wrong code counts an attempt; the right one verifies', async () => {
    const v = await newVerification({ name: 'Dana Doe' });
    const { code, mail } = await codeByMail(v.token, v.email);
    assert.equal(mail.subject, 'Your verification code');
    assert.match(mail.text ?? '', /^Hello Dana Doe,/);
    assert.match(mail.text ?? '', /within 10 minutes/);
    assert.ok(typeof mail.html === 'string' && mail.html.includes(`>${code}</p>`), 'an HTML twin shows the code, like every email');

    const wrong = assertError(await confirm(v.token, wrongCode(code)), 400, 'INVALID_CODE');
    assert.equal(wrong.attemptsLeft, 4);
    assert.equal((await get(v.verificationId)).json().attemptsLeft, 4);
    // A malformed code is no guess: refused without counting.
    assertError(await confirm(v.token, '12ab'), 400, 'VALIDATION_ERROR');

    const ok = await confirm(v.token, `${code.slice(0, 3)} ${code.slice(3)}`);
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().status, 'verified');
    const stored = (await get(v.verificationId)).json();
    assert.equal(stored.status, 'verified');
    assert.ok(stored.verifiedAt);
    assert.equal(stored.attemptsLeft, 4);
    assert.equal((await row(v.verificationId)).codeHash, null, 'a used code is gone');
    // Confirming again answers the same; asking for another code is refused.
    assert.equal((await confirm(v.token, code)).json().status, 'verified');
    const again = assertError(await requestCode(v.token), 409, 'VERIFICATION_NOT_PENDING');
    assert.equal(again.status, 'verified');
  });

  test('the fifth wrong code fails the verification, and then nothing works', async () => {
    const v = await newVerification();
    const { code } = await codeByMail(v.token, v.email);
    for (let left = 4; left >= 1; left--) assert.equal(assertError(await confirm(v.token, wrongCode(code)), 400, 'INVALID_CODE').attemptsLeft, left);
    const fifth = assertError(await confirm(v.token, wrongCode(code)), 409, 'VERIFICATION_FAILED');
    assert.equal(fifth.attemptsLeft, 0);
    assertError(await confirm(v.token, code), 409, 'VERIFICATION_FAILED');
    assertError(await requestCode(v.token), 409, 'VERIFICATION_FAILED');
    const stored = (await get(v.verificationId)).json();
    assert.deepEqual([stored.status, stored.failureReason, stored.attemptsLeft], ['failed', 'too_many_wrong_codes', 0]);
    assert.match((await t.app.inject({ url: `/verify/${v.token}` })).body, /data-state="failed"/);
  });

  test('concurrent wrong codes cannot exceed five attempts', async () => {
    const v = await newVerification();
    const { code } = await codeByMail(v.token, v.email);
    const answers = await Promise.all(Array.from({ length: 9 }, () => confirm(v.token, wrongCode(code))));
    const codes = answers.map((a) => a.json().code).sort();
    assert.deepEqual(codes, [...Array(4).fill('INVALID_CODE'), ...Array(5).fill('VERIFICATION_FAILED')]);
    assert.equal((await row(v.verificationId)).failedAttempts, 5);
  });

  test('a new code replaces the old one, and a replaced code is never mailed', async () => {
    const v = await newVerification();
    const first = await codeByMail(v.token, v.email);
    advance(31_000);
    // Two requests before the job runs: only the live code goes out.
    const queued = await requestCode(v.token);
    assert.equal(queued.statusCode, 200, queued.body);
    advance(61_000);
    const before = smtp.messages.length;
    const second = await codeByMail(v.token, v.email);
    assert.equal(smtp.messages.slice(before).filter((m) => toOf(m).includes(v.email)).length, 1, 'one mail for two requests');
    assert.notEqual(second.code, first.code);
    assert.equal(assertError(await confirm(v.token, first.code), 400, 'INVALID_CODE').attemptsLeft, 4);
    assert.equal((await confirm(v.token, second.code)).statusCode, 200);
  });

  test('a code is valid for 10 minutes; a stale code does not count as an attempt', async () => {
    const v = await newVerification();
    const { code } = await codeByMail(v.token, v.email);
    advance(10 * 60_000 + 1_000);
    assertError(await confirm(v.token, code), 400, 'CODE_EXPIRED');
    assert.equal((await row(v.verificationId)).failedAttempts, 0);
    const fresh = await codeByMail(v.token, v.email);
    assert.equal((await confirm(v.token, fresh.code)).json().status, 'verified');
  });

  test('code requests are rate-limited per verification: 429 CODE_RATE_LIMITED with Retry-After', async () => {
    const v = await newVerification();
    const first = await requestCode(v.token);
    assert.equal(first.json().retryAfterSeconds, 30);
    assert.equal(first.json().sentTo, `${v.email[0]}***@example.com`);
    const limited = assertError(await requestCode(v.token), 429, 'CODE_RATE_LIMITED');
    assert.equal(limited.retryAfterSeconds, 30);
    assert.equal((await requestCode(v.token)).headers['retry-after'], '30');
    advance(30_000);
    const second = await requestCode(v.token);
    assert.equal(second.statusCode, 200, second.body);
    assert.equal(second.json().retryAfterSeconds, 60);
    advance(20_000);
    const third = assertError(await requestCode(v.token), 429, 'CODE_RATE_LIMITED');
    assert.equal(third.retryAfterSeconds, 40);
    assert.equal((await row(v.verificationId)).codesSent, 2);
  });
});

describe('expiry', () => {
  test('past expiresAt a verification reads expired, the status route and the sweep record it, and codes stop', async () => {
    const c = await t.createCustomer(500);
    const v = await newVerification({}, c.apiKey);
    const swept = await newVerification({}, c.apiKey);
    advance(24 * 3_600_000 + 1_000);

    // On read: the stored copy shows expired before anything wrote it.
    assert.equal((await get(v.verificationId, c.apiKey)).json().status, 'expired');
    assert.equal((await row(v.verificationId)).status, 'pending');
    const expiredList = (await t.app.inject({ url: '/v1/verifications?status=expired', headers: bearer(c.apiKey) })).json();
    assert.equal(expiredList.total, 2);
    assert.equal((await t.app.inject({ url: '/v1/verifications?status=pending', headers: bearer(c.apiKey) })).json().total, 0);
    assertError(await requestCode(v.token), 410, 'VERIFICATION_EXPIRED');
    assert.match((await t.app.inject({ url: `/verify/${v.token}` })).body, /data-state="expired"/);

    // The live status route corrects the stored copy, with an audit row.
    const live = await get(v.verificationId, c.apiKey, '/status');
    assert.equal(live.json().status, 'expired');
    assert.equal((await row(v.verificationId)).status, 'expired');
    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, v.verificationId), eq(auditLog.action, 'verification.reconcile')));
    assert.equal(audit.length, 1);

    // The sweep marks the rest.
    await t.container.db.transaction((tx) => t.container.verifications.expireDue(tx));
    assert.equal((await row(swept.verificationId)).status, 'expired');
  });
});

describe('POST /v1/verifications/{id}/cancel', () => {
  test('cancels a pending verification (free); again answers the same; a finished one is 409', async () => {
    const v = await newVerification();
    const before = await account(t);
    const res = await t.app.inject({ method: 'POST', url: `/v1/verifications/${v.verificationId}/cancel`, headers: bearer(t.customer.apiKey) });
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().status, 'canceled');
    assert.equal((await account(t)).creditsCents, before.creditsCents);
    assert.equal((await t.app.inject({ method: 'POST', url: `/v1/verifications/${v.verificationId}/cancel`, headers: bearer(t.customer.apiKey) })).json().status, 'canceled');
    assertError(await requestCode(v.token), 409, 'VERIFICATION_NOT_PENDING');
    assert.match((await t.app.inject({ url: `/verify/${v.token}` })).body, /data-state="canceled"/);

    const done = await newVerification();
    const { code } = await codeByMail(done.token, done.email);
    assert.equal((await confirm(done.token, code)).statusCode, 200);
    const refused = assertError(await t.app.inject({ method: 'POST', url: `/v1/verifications/${done.verificationId}/cancel`, headers: bearer(t.customer.apiKey) }), 409, 'VERIFICATION_NOT_PENDING');
    assert.equal(refused.status, 'verified');
  });
});

describe('the /verify page', () => {
  test('is server-rendered in its state under a strict CSP, with no inline script or style', async () => {
    const v = await newVerification();
    const res = await t.app.inject({ url: `/verify/${v.token}` });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    assert.equal(res.headers['cache-control'], 'no-store');
    assert.equal(res.headers['referrer-policy'], 'no-referrer');
    const csp = String(res.headers['content-security-policy']);
    for (const d of ["default-src 'none'", "script-src 'self'", "connect-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'none'"]) assert.ok(csp.split(';').includes(d), `${d} in ${csp}`);
    assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval/);
    // The messages block is data (type="application/json"), which no browser runs.
    assert.doesNotMatch(res.body, /<script(?![^>]*\ssrc=)(?![^>]*type="application\/json")/, 'no inline script');
    assert.doesNotMatch(res.body, /\sstyle=/, 'no inline style');
    assert.match(res.body, /data-state="ask"/);
    assert.ok(res.body.includes(`${v.email[0]}***@example.com`), 'the address, masked');
    assert.ok(!res.body.includes(v.email), 'never the whole address');
    const assets = [...res.body.matchAll(/(?:src|href)="(assets\/[^"]+)"/g)].map((m) => `/verify/${m[1]}`);
    assert.deepEqual(assets.map((a) => a.split('/').pop()), ['public.css', 'verify.css', 'verify.js']);
    for (const url of assets) {
      const asset = await t.app.inject({ url });
      assert.equal(asset.statusCode, 200, url);
      assert.match(String(asset.headers['cache-control']), /immutable/);
    }
    for (const url of ['/verify/assets/verify.js', `/verify/${assets[0].split('/')[3]}/../page.ts`]) assert.equal((await t.app.inject({ url })).statusCode, 404, url);

    await requestCode(v.token);
    assert.match((await t.app.inject({ url: `/verify/${v.token}` })).body, /data-state="enter"/);
    for (const bad of ['short', 'A'.repeat(43), 'bad!token!value!!']) {
      const page = await t.app.inject({ url: `/verify/${bad}` });
      assert.equal(page.statusCode, 404, bad);
      assert.match(page.body, /This verification link is not valid/);
    }
    assertError(await requestCode('A'.repeat(43)), 404, 'VERIFICATION_LINK_INVALID');
    assertError(await confirm('A'.repeat(43), '123456'), 404, 'VERIFICATION_LINK_INVALID');
  });
});

describe('primitives for gated signing recipients', () => {
  const ctxOf = (customer: TestCustomer, extra: Partial<RequestContext['actor']> = {}, testModeHeader = false): RequestContext => ({
    actor: { customerId: customer.id, mode: 'live', via: 'api_key', keyId: null, ...extra },
    requestId: randomUUID(),
    ip: '127.0.0.1',
    testModeHeader,
  });

  test('createForRecipient charges USD 0.50 in the caller transaction; codes work without a link', async () => {
    const c = await t.createCustomer(500);
    const envelopeId = randomUUID();
    const recipientId = `r-${randomUUID()}`;
    const email = uniq('gated');
    const { verificationId } = await t.container.db.transaction((tx) =>
      t.container.verifications.createForRecipient(tx, ctxOf(c), { envelopeId, engineRecipientId: recipientId, email, name: 'Gail Gated', expiresAt: new Date(Date.now() + offsetMs + 3_600_000) }),
    );
    assert.equal((await account(t, c.apiKey)).creditsCents, 450);
    const debit = (await ledger(t, c.id)).find((e) => e.operation === 'verification_create')!;
    assert.equal(debit.envelopeId, envelopeId);
    const v = (await get(verificationId, c.apiKey)).json();
    assert.deepEqual([v.verificationUrl, v.envelopeId, v.type], [null, envelopeId, 'email']);
    assert.equal((await t.container.verifications.recipientVerification(t.container.db, recipientId))?.id, verificationId);
    assert.equal(await t.container.verifications.recipientVerification(t.container.db, 'r-none'), undefined);
    assertError(await t.app.inject({ method: 'POST', url: `/v1/verifications/${verificationId}/cancel`, headers: bearer(c.apiKey) }), 409, 'VERIFICATION_NOT_CANCELABLE');

    const sent = await t.container.db.transaction((tx) => t.container.verifications.requestRecipientCode(tx, recipientId));
    assert.equal(sent.sentTo, `${email[0]}***@example.com`);
    assert.equal(sent.retryAfterSeconds, 30);
    await drain(t);
    const mail = await smtp.waitFor((m) => toOf(m).includes(email));
    assert.match(mail.text ?? '', /on the signing page/);
    const code = codeOf(mail)!;
    const wrong = await t.container.db.transaction((tx) => t.container.verifications.confirmRecipientCode(tx, recipientId, wrongCode(code)));
    assert.deepEqual(wrong, { verified: false, verifiedAt: null, attemptsLeft: 4 });
    const right = await t.container.db.transaction((tx) => t.container.verifications.confirmRecipientCode(tx, recipientId, code));
    assert.equal(right.verified, true);
    assert.ok(right.verifiedAt instanceof Date);
    const gates = await t.container.verifications.gatesOf(t.container.db, [recipientId]);
    assert.deepEqual(gates.get(recipientId), { verificationId, chargedMicros: 500_000n, verified: true });
    await assert.rejects(
      t.container.db.transaction((tx) => t.container.verifications.requestRecipientCode(tx, 'r-none')),
      (err: unknown) => err instanceof AppError && err.code === 'VERIFICATION_NOT_FOUND',
    );
  });

  test('an x402 caller is refused; a test-mode header makes it a free test verification', async () => {
    const c = await t.createCustomer(500);
    const input = { envelopeId: randomUUID(), engineRecipientId: `r-${randomUUID()}`, email: uniq('x'), name: 'X', expiresAt: new Date(Date.now() + 3_600_000) };
    const payment = { priceMicros: 100_000n, describe() {} };
    await assert.rejects(
      t.container.db.transaction((tx) => t.container.verifications.createForRecipient(tx, ctxOf(c, { via: 'x402', payment }), input)),
      (err: unknown) => err instanceof AppError && err.code === 'X402_NOT_APPLICABLE',
    );
    const { verificationId } = await t.container.db.transaction((tx) => t.container.verifications.createForRecipient(tx, ctxOf(c, {}, true), input));
    assert.equal((await row(verificationId)).chargedMicros, 0n);
    assert.equal((await account(t, c.apiKey)).sandboxUsed, 1);
  });
});

test('POST /webhooks/stripe is 404 when Stripe is not configured', async () => {
  assertError(await t.app.inject({ method: 'POST', url: '/webhooks/stripe', headers: { 'content-type': 'application/json', 'stripe-signature': 't=1,v1=00' }, payload: '{}' }), 404, 'NOT_FOUND');
});
