/**
 * Embedded signing (docs/embedding.md): POST /v1/envelopes/{id}/recipients/{recipient}/embed-link mints a
 * short-lived, single-use link; its page is framable by the account's allowedOrigins only; an envelope
 * created with delivery: "embedded" emails no invitation. The browser side (framing, events) is in
 * test/e2e/embedded-signing.e2e.test.ts; auth, another customer and the Idempotency-Key in
 * test/common-routes.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError, createEnvelope, drain, envelopeBody, execSql, outbox, person, postMultipart, recipientToken, rejectAs, samplePdf, sigField, signAs, toOf } from './fixtures/envelopes.js';

let t: TestApp;
before(async () => (t = await createTestApp({ env: { SIGNING_ENGINE: 'local' } })));
after(() => t.close());

const mint = (envelopeId: string, recipient: string, apiKey = t.customer.apiKey) =>
  t.app.inject({ method: 'POST', url: `/v1/envelopes/${envelopeId}/recipients/${encodeURIComponent(recipient)}/embed-link`, headers: bearer(apiKey) });
const patchAccount = (body: unknown, apiKey = t.customer.apiKey) => t.app.inject({ method: 'PATCH', url: '/v1/account', headers: bearer(apiKey), payload: body as object });
const open = (url: string) => t.app.inject({ url: new URL(url).pathname });
const frameAncestors = (csp: unknown) => /frame-ancestors ([^;]+)/.exec(String(csp))?.[1];

describe('embed links', () => {
  test('an embed link opens the recipient\'s page once, framable by the allowed origins only; the page names the envelope and recipient', async () => {
    assert.equal((await patchAccount({ allowedOrigins: ['https://app.example.com', 'http://localhost:5173/'] })).statusCode, 200);
    const alice = person('embed-alice');
    const env = await createEnvelope(t, { title: 'Embedded', recipients: [alice] });
    const res = await mint(env.envelopeId, '1');
    assert.equal(res.statusCode, 201, res.body);
    const link = res.json();
    assert.match(link.url, /\/sign\/embed\/[A-Za-z0-9_-]{43}$/);
    assert.deepEqual([link.envelopeId, link.recipientId], [env.envelopeId, 1]);
    const ttl = Date.parse(link.expiresAt) - Date.now();
    assert.ok(ttl > 9 * 60_000 && ttl <= 10 * 60_000, link.expiresAt);

    const page = await open(link.url);
    assert.equal(page.statusCode, 200);
    assert.equal(frameAncestors(page.headers['content-security-policy']), 'https://app.example.com http://localhost:5173');
    assert.equal(page.headers['x-frame-options'], undefined);
    assert.equal(page.headers['cache-control'], 'no-store');
    const token = recipientToken(env, alice.email);
    assert.ok(page.body.includes(`data-session-url="../${token}/session"`), 'the page acts with the recipient\'s own link');
    assert.ok(page.body.includes(`data-embed-origins="https://app.example.com http://localhost:5173" data-envelope-id="${env.envelopeId}" data-recipient-id="1"`));

    const again = await open(link.url);
    assert.equal(again.statusCode, 404, 'single use');
    assert.equal(frameAncestors(again.headers['content-security-policy']), "'none'");

    // An ordinary link keeps refusing every frame.
    const ordinary = await t.app.inject({ url: `/sign/${token}` });
    assert.equal(frameAncestors(ordinary.headers['content-security-policy']), "'none'");
  });

  test('an account with no allowed origins gets frame-ancestors none', async () => {
    const other = await t.createCustomer(500);
    const bob = person('embed-bob');
    const env = await createEnvelope(t, { recipients: [bob] }, { apiKey: other.apiKey });
    const page = await open((await mint(env.envelopeId, bob.email, other.apiKey)).json().url);
    assert.equal(page.statusCode, 200);
    assert.equal(frameAncestors(page.headers['content-security-policy']), "'none'");
  });

  test('an expired link opens nothing', async () => {
    const env = await createEnvelope(t, { recipients: [person('embed-late')] });
    const link = (await mint(env.envelopeId, '1')).json();
    await execSql(t, sql`UPDATE embed_links SET expires_at = now() - interval '1 second' WHERE envelope_id = ${env.envelopeId}`);
    assert.equal((await open(link.url)).statusCode, 404);
  });

  test('refused for a recipient who acted, an envelope that ended or is a draft, a recipient not on it, another customer\'s envelope', async () => {
    const carol = person('embed-carol');
    const dave = person('embed-dave');
    const env = await createEnvelope(t, { recipients: [carol, dave] });
    await signAs(t, recipientToken(env, carol.email));
    assertError(await mint(env.envelopeId, carol.email), 409, 'ALREADY_ACTED');
    assertError(await mint(env.envelopeId, '3'), 404, 'RECIPIENT_NOT_FOUND');
    await rejectAs(t, recipientToken(env, dave.email), 'no');
    assertError(await mint(env.envelopeId, '2'), 410, 'ENVELOPE_NOT_ACTIVE');

    const draft = await createEnvelope(t, { recipients: [person('embed-draft')], draft: true });
    assertError(await mint(draft.envelopeId, '1'), 409, 'INVALID_STATE');

    const stranger = await t.createCustomer(500);
    assertError(await mint(draft.envelopeId, '1', stranger.apiKey), 404, 'ENVELOPE_NOT_FOUND');
    assertError(await mint('not-a-uuid', '1'), 404, 'ENVELOPE_NOT_FOUND');
    assertError(await mint(draft.envelopeId, 'nobody'), 400, 'VALIDATION_ERROR');
  });

  test('delivery: "embedded" emails no invitation; an ordinary envelope does', async () => {
    const quiet = person('embed-quiet');
    const loud = person('embed-loud');
    const embedded = await createEnvelope(t, { recipients: [quiet], delivery: 'embedded' });
    await createEnvelope(t, { recipients: [loud] });
    await drain(t);
    const mails = await outbox(t);
    assert.equal(mails.filter((m) => toOf(m).includes(quiet.email.toLowerCase())).length, 0, 'no invitation for the embedded recipient');
    assert.equal(mails.filter((m) => toOf(m).includes(loud.email.toLowerCase())).length, 1);
    // The envelope is out all the same: its recipient signs through an embed link.
    assert.equal((await mint(embedded.envelopeId, '1')).statusCode, 201);
    const bad = await postMultipart(t, envelopeBody([await samplePdf()], { recipients: [loud], fields: [sigField(loud.email)], delivery: 'pigeon' }));
    assert.match(JSON.stringify(assertError(bad, 400, 'VALIDATION_ERROR').details), /delivery/);
  });
});

describe('account: allowed origins and brand colour', () => {
  test('origins are normalised, deduplicated and bounded; http only for localhost; no paths or wildcards', async () => {
    const ok = await patchAccount({ allowedOrigins: ['https://A.example.com:443/', 'https://a.example.com', 'http://127.0.0.1:8080'] });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.deepEqual(ok.json().allowedOrigins, ['https://a.example.com', 'http://127.0.0.1:8080']);
    for (const bad of ['http://app.example.com', 'https://app.example.com/path', 'https://*.example.com', 'not a url', 'javascript:alert(1)']) {
      const res = assertError(await patchAccount({ allowedOrigins: [bad] }), 400, 'VALIDATION_ERROR');
      assert.match(JSON.stringify(res.details), /allowedOrigins/);
    }
    assertError(await patchAccount({ allowedOrigins: Array.from({ length: 11 }, (_, i) => `https://a${i}.example.com`) }), 400, 'VALIDATION_ERROR');
    assert.deepEqual((await patchAccount({ allowedOrigins: [] })).json().allowedOrigins, []);
  });

  test('a brand colour below 4.5:1 against white text is refused, saying its ratio; a dark one is kept and served as brand.css', async () => {
    const res = assertError(await patchAccount({ brandColor: '#ffcc00' }), 400, 'VALIDATION_ERROR');
    assert.match(JSON.stringify(res.details), /contrast of 1\.\d\d:1, below the 4\.5:1/);
    assertError(await patchAccount({ brandColor: 'red' }), 400, 'VALIDATION_ERROR');
    const ok = await patchAccount({ brandColor: '#0B5D1E' });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal(ok.json().brandColor, '#0b5d1e');

    const env = await createEnvelope(t, { recipients: [person('brand-erin')] });
    const css = await t.app.inject({ url: `/sign/${env.recipients[0].signingUrl.split('/').pop()}/brand.css` });
    assert.equal(css.statusCode, 200);
    assert.match(css.headers['content-type'] as string, /^text\/css/);
    assert.equal(css.body.trim(), ':root { --accent: #0b5d1e; }');
    assert.equal((await t.app.inject({ url: '/sign/AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA/brand.css' })).body.includes('--accent'), false);
    // The invitation's button carries the colour too; the text part is unchanged.
    await drain(t);
    const invitation = (await outbox(t)).find((m) => toOf(m).includes(env.recipients[0].email.toLowerCase()));
    assert.match(String(invitation?.html), /background-color:\s*#0b5d1e/i);
    assert.equal((await patchAccount({ brandColor: null })).json().brandColor, null);
  });

  test('/embed.js is served cacheable, with an ETag', async () => {
    const res = await t.app.inject({ url: '/embed.js' });
    assert.equal(res.statusCode, 200);
    assert.match(res.headers['content-type'] as string, /javascript/);
    assert.match(res.headers['cache-control'] as string, /max-age=\d+/);
    assert.match(res.body, /Signet\.embed|embed: embed/);
    assert.equal((await t.app.inject({ url: '/embed.js', headers: { 'if-none-match': String(res.headers.etag) } })).statusCode, 304);
  });
});
