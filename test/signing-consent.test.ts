import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { eq, sql } from 'drizzle-orm';
import { engineEvents, engineRecipients } from '../src/db/schema/index.js';
import { DEFAULT_CONSENT_TEXT } from '../src/modules/signing/consent-text.js';
import { bearer, createTestApp, testEngine, type TestApp } from './harness.js';
import {
  assertError,
  completeOnly,
  consent,
  createEnvelope,
  drain,
  execSql,
  getEnvelope,
  person,
  PNG_DATA_URL,
  recipientToken,
  reject,
  session,
} from './fixtures/envelopes.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');
const hasPdftotext = spawnSync('pdftotext', ['-v']).error === undefined;

let t: TestApp;
const tmp = mkdtempSync(path.join(tmpdir(), 'signet-consent-'));
before(async () => {
  t = await createTestApp();
});
after(async () => {
  await t.close();
  rmSync(tmp, { recursive: true, force: true });
});

// Signet's own signing page and its engine's consent: Documenso keeps its own.
const local = { skip: testEngine === 'documenso' ? 'Documenso hosts its own signing page and consent' : false };

const signBody = async (token: string) => {
  const s = (await session(t, token)).json();
  return { fields: (s.fields as { fieldId: number }[]).map((f) => ({ fieldId: f.fieldId, value: null })), signature: { kind: 'drawn', image: PNG_DATA_URL } };
};
const engineRecipient = async (email: string) => (await t.container.db.select().from(engineRecipients).where(eq(engineRecipients.email, email)))[0];

describe('POST /sign/{token}/consent', local, () => {
  test('the session asks for consent with the text and says who asks, why and by when; signing before consenting is refused CONSENT_REQUIRED', async () => {
    const s = person('c-before');
    const env = await createEnvelope(t, { recipients: [s], title: 'Lease', meta: { message: 'Please sign by Friday.' } });
    const token = recipientToken(env, s.email);
    const body = (await session(t, token)).json();
    assert.equal(body.canAct, true);
    assert.deepEqual(body.consent, { given: false, consentedAt: null, text: DEFAULT_CONSENT_TEXT });
    assert.deepEqual(body.sender, { name: 'Test Customer', message: 'Please sign by Friday.', logo: null });
    assert.equal(body.expiresAt, (await getEnvelope(t, env.envelopeId)).expiresAt);

    assertError(await completeOnly(t, token, await signBody(token)), 409, 'CONSENT_REQUIRED');
    const after = await getEnvelope(t, env.envelopeId);
    assert.equal(after.recipients[0].signingStatus, 'NOT_SIGNED');
    assert.ok(!after.events?.some((e) => e.eventType === 'DOCUMENT_SIGNED'));
    // No signature image is left behind by the refusal either: it is refused before the image is stored.
    assert.equal((await engineRecipient(s.email)).signature, null);
  });

  test('records when, from where and which text, once; the event is listed on the envelope (not a webhook event); then signing works', async () => {
    const s = person('c-happy');
    const env = await createEnvelope(t, { recipients: [s] });
    const token = recipientToken(env, s.email);
    await session(t, token);
    const first = await t.app.inject({ method: 'POST', url: `/sign/${token}/consent`, headers: { 'content-type': 'application/json', 'user-agent': 'ConsentTest/1.0' }, payload: { timeZone: 'Europe/Paris' }, remoteAddress: '198.51.100.9' });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().consented, true);
    const again = await consent(t, token, { timeZone: 'Asia/Tokyo' });
    assert.equal(again.statusCode, 200, again.body);
    assert.equal(again.json().consentedAt, first.json().consentedAt, 'a second call answers the first consent');

    const r = await engineRecipient(s.email);
    assert.equal(r.consentedAt?.toISOString(), first.json().consentedAt);
    assert.equal(r.consentIp, '198.51.100.9');
    assert.equal(r.consentUserAgent, 'ConsentTest/1.0');
    assert.equal(r.timeZone, 'Europe/Paris', 'the first consent’s zone stays');
    assert.equal(r.consentTextSha256, sha(DEFAULT_CONSENT_TEXT));
    const events = (await t.container.db.select().from(engineEvents).where(eq(engineEvents.documentId, env.engineEnvelopeId))).filter((e) => e.event === 'CONSENTED');
    assert.equal(events.length, 1);
    assert.equal(events[0].ip, '198.51.100.9');
    assert.equal(events[0].userAgent, 'ConsentTest/1.0');

    const listed = (await getEnvelope(t, env.envelopeId)).events!.filter((e) => e.eventType === 'RECIPIENT_CONSENTED');
    assert.deepEqual(
      listed.map((e) => [e.event, e.recipientEmail]),
      [['recipient.consented', s.email]],
    );
    assert.equal((await session(t, token)).json().consent.given, true);

    const signed = await completeOnly(t, token, await signBody(token));
    assert.equal(signed.statusCode, 200, signed.body);
    // SPEC.md's seven events are the webhook set: a consent is listed, never offered to webhooks.
    const hook = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: bearer(t.customer.apiKey), payload: { url: 'https://hooks.example.com/x', events: ['recipient.consented'] } });
    assert.equal(hook.statusCode, 400, hook.body);
  });

  test('a recipient who has not consented can still decline the document', async () => {
    const s = person('c-decline');
    const env = await createEnvelope(t, { recipients: [s] });
    const token = recipientToken(env, s.email);
    const res = await reject(t, token, 'I do not agree to sign electronically');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'REJECTED');
    // After the decline nothing more is recorded, a consent neither.
    assertError(await consent(t, token), 409, 'ALREADY_ACTED');
  });

  test('an unknown token is 404; a viewer has nothing to consent to; bad time zones are 400', async () => {
    assertError(await consent(t, 'A'.repeat(43)), 404, 'SIGNING_LINK_INVALID');
    const s = person('c-bad');
    const v = person('c-viewer', 'VIEWER');
    const env = await createEnvelope(t, { recipients: [s, v] });
    assertError(await consent(t, recipientToken(env, v.email)), 403, 'FORBIDDEN');
    const token = recipientToken(env, s.email);
    for (const timeZone of ['Mars/Olympus_Mons', 'Europe/Paris; DROP TABLE', 'x'.repeat(65), 42]) {
      assertError(await consent(t, token, { timeZone }), 400, 'VALIDATION_ERROR');
    }
    assert.equal((await engineRecipient(s.email)).consentedAt, null, 'nothing recorded by a refused call');
    // No body at all, and a null zone, are fine.
    const bare = await t.app.inject({ method: 'POST', url: `/sign/${token}/consent` });
    assert.equal(bare.statusCode, 200, bare.body);
  });

  test('the account’s own text is shown, copied onto the document at create: a later change does not alter it', async () => {
    await execSql(t, sql`UPDATE customers SET consent_text = ${'Our own terms.\n\nSecond paragraph.'} WHERE id = ${t.customer.id}`);
    try {
      const s = person('c-custom');
      const env = await createEnvelope(t, { recipients: [s] });
      await execSql(t, sql`UPDATE customers SET consent_text = ${'Changed later.'} WHERE id = ${t.customer.id}`);
      const token = recipientToken(env, s.email);
      assert.equal((await session(t, token)).json().consent.text, 'Our own terms.\n\nSecond paragraph.');
      assert.equal((await consent(t, token)).statusCode, 200);
      assert.equal((await engineRecipient(s.email)).consentTextSha256, sha('Our own terms.\n\nSecond paragraph.'));
    } finally {
      await execSql(t, sql`UPDATE customers SET consent_text = NULL WHERE id = ${t.customer.id}`);
    }
  });

  test('the sealed certificate prints the sender, the consent with its time in UTC and the recipient’s zone, and the text', { skip: local.skip || (hasPdftotext ? false : 'pdftotext is not installed') }, async () => {
    const s = person('c-cert');
    const env = await createEnvelope(t, { recipients: [s], title: 'Consent certificate' });
    const token = recipientToken(env, s.email);
    await session(t, token);
    assert.equal((await consent(t, token, { timeZone: 'America/New_York' })).statusCode, 200);
    assert.equal((await completeOnly(t, token, await signBody(token))).statusCode, 200);
    await drain(t);
    const dl = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(dl.statusCode, 200);
    const f = path.join(tmp, 'sealed.pdf');
    writeFileSync(f, dl.rawPayload);
    const text = execFileSync('pdftotext', ['-layout', '-f', '3', f, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
    const consentedAt = (await engineRecipient(s.email)).consentedAt!;
    const utc = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZone: 'UTC' }).format(consentedAt);
    for (const want of ['Sent by Test Customer', `Consented ${utc} UTC (`, 'America/New_York)', `text SHA-256 ${sha(DEFAULT_CONSENT_TEXT)}`, 'same legal effect as a handwritten signature', 'PAdES B-B', 'CONSENTED']) {
      assert.ok(text.includes(want), `certificate lacks “${want}”:\n${text}`);
    }
  });
});
