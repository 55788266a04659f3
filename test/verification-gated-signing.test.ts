import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { and, asc, eq, sql } from 'drizzle-orm';
import { engineEvents } from '../src/db/schema/index.js';
import { utcTime } from '../src/pdf/certificate.js';
import { bearer, type TestApp } from './harness.js';
import {
  account,
  assertError,
  complete,
  count,
  drain,
  type Envelope,
  execSql,
  envelopeBody,
  eventTypes,
  getEnvelope,
  ledger,
  newKey,
  person,
  postMultipart,
  type Recipient,
  recipientToken,
  reject,
  samplePdf,
  session,
  sigField,
  signAs,
  startAppWithSmtp,
  stopAppWithSmtp,
  toOf,
} from './fixtures/envelopes.js';
import type { TestSmtpServer } from './fixtures/smtp.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let smtp: TestSmtpServer;
let t: TestApp;
before(async () => ({ smtp, t } = await startAppWithSmtp()));
after(() => stopAppWithSmtp(t, smtp));

type Gated = Recipient & { verificationRequired?: boolean };
const gated = (tag: string, role = 'SIGNER'): Gated => ({ ...person(tag, role), verificationRequired: true });

/** A payload whose SIGNERs each get a SIGNATURE field. */
const payloadOf = (recipients: Gated[], extra: Record<string, unknown> = {}) => ({
  title: 'Gated NDA',
  recipients,
  fields: recipients.filter((r) => r.role === 'SIGNER').map((r) => sigField(r.email)),
  ...extra,
});

async function post(payload: unknown, opts: Parameters<typeof postMultipart>[2] = {}, pdfs?: Uint8Array[]) {
  return postMultipart(t, envelopeBody(pdfs ?? [await samplePdf()], payload), opts);
}

/** The customer's debits, as [operation, micros], oldest first. */
async function debits(customerId: string): Promise<[string | null, bigint][]> {
  return (await ledger(t, customerId)).filter((e) => e.direction === 'debit').map((e) => [e.operation, e.amountMicros]);
}

const json = { 'content-type': 'application/json' };
const requestCode = (token: string) => t.app.inject({ method: 'POST', url: `/sign/${token}/verification/code`, headers: json, payload: '{}' });
const confirmCode = (token: string, code: string) => t.app.inject({ method: 'POST', url: `/sign/${token}/verification/confirm`, headers: json, payload: JSON.stringify({ code }) });

/** Asks for a code and reads it from the mail the real SMTP server received. */
async function emailedCode(token: string, email: string): Promise<string> {
  const before = smtp.messages.length;
  const res = await requestCode(token);
  assert.equal(res.statusCode, 200, res.body);
  await drain(t);
  // The code's mail, not the invitation: the two are separate jobs and may arrive in either order.
  const mail = await smtp.waitFor((m) => smtp.messages.indexOf(m) >= before && toOf(m).includes(email.toLowerCase()) && m.subject === 'Your verification code');
  const code = /\b(\d{6})\b/.exec(mail.text ?? '')?.[1];
  assert.ok(code, `a 6-digit code in: ${mail.text}`);
  return code;
}

/** The text of a PDF's last page (the audit certificate), via poppler's pdftotext. */
/** The certificate's pages (it may run over several since it prints the consent text): every page after the document's two. */
function certificateText(bytes: Uint8Array): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-gated-'));
  try {
    const file = path.join(dir, 'sealed.pdf');
    writeFileSync(file, bytes);
    const pages = Number(/Pages:\s+(\d+)/.exec(execFileSync('pdfinfo', [file], { encoding: 'utf8' }))![1]);
    return execFileSync('pdftotext', ['-layout', '-f', '3', '-l', String(pages), file, '-'], { encoding: 'utf8' }).replace(/\s+/g, ' ');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('charging a gated recipient', () => {
  test('create-and-send charges USD 0.10 + 0.50 once under one Idempotency-Key; a replay charges nothing more', async () => {
    const c = await t.createCustomer(500);
    const alice = gated('alice');
    const bob = person('bob');
    const key = newKey();
    const body = envelopeBody([await samplePdf()], payloadOf([alice, bob]));
    const res = await postMultipart(t, body, { apiKey: c.apiKey, key });
    assert.equal(res.statusCode, 201, res.body);
    const env = res.json() as Envelope;
    const [a, b] = env.recipients;
    assert.equal(a.verificationRequired, true);
    assert.match(a.verificationId ?? '', UUID);
    assert.equal(b.verificationRequired, false);
    assert.equal(b.verificationId, null);
    assert.deepEqual(await debits(c.id), [
      ['envelope_create', 100_000n],
      ['verification_create', 500_000n],
    ]);
    assert.equal((await account(t, c.apiKey)).creditsCents, 440);

    const replay = await postMultipart(t, body, { apiKey: c.apiKey, key });
    assert.equal(replay.statusCode, 201, replay.body);
    assert.deepEqual(replay.json(), res.json());
    assert.equal((await debits(c.id)).length, 2);
    assert.equal((await account(t, c.apiKey)).creditsCents, 440);

    // The verification is the customer's own resource, pending until the recipient confirms a code.
    const v = await t.app.inject({ url: `/v1/verifications/${a.verificationId}`, headers: bearer(c.apiKey) });
    assert.equal(v.statusCode, 200, v.body);
    assert.equal(v.json().status, 'pending');
    assert.equal(v.json().email, alice.email);
    // GET shows the same on a later read.
    assert.equal((await getEnvelope(t, env.envelopeId, c.apiKey)).recipients[0].verificationId, a.verificationId);
  });

  test('a draft is free; its send charges the envelope and the verification', async () => {
    const c = await t.createCustomer(500);
    const alice = gated('draft-alice');
    const approver = gated('draft-approver', 'APPROVER');
    const res = await post(payloadOf([approver, alice]), { apiKey: c.apiKey, url: '/v1/envelopes/draft' });
    assert.equal(res.statusCode, 201, res.body);
    const draft = res.json() as Envelope;
    assert.deepEqual(draft.recipients.map((r) => [r.verificationRequired, r.verificationId]), [
      [true, null],
      [true, null],
    ]);
    assert.deepEqual(await debits(c.id), []);

    const key = newKey();
    const send = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${draft.envelopeId}/send`, headers: { ...bearer(c.apiKey), 'idempotency-key': key } });
    assert.equal(send.statusCode, 200, send.body);
    assert.deepEqual(await debits(c.id), [
      ['envelope_send', 100_000n],
      ['verification_create', 500_000n],
      ['verification_create', 500_000n],
    ]);
    const again = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${draft.envelopeId}/send`, headers: { ...bearer(c.apiKey), 'idempotency-key': key } });
    assert.equal(again.statusCode, 200, again.body);
    assert.equal((await debits(c.id)).length, 3);
    const sent = await getEnvelope(t, draft.envelopeId, c.apiKey);
    for (const r of sent.recipients) assert.match(String(r.verificationId), UUID);
  });

  test('a VIEWER or CC cannot be required to verify (400 VALIDATION_ERROR naming the recipient)', async () => {
    for (const role of ['VIEWER', 'CC']) {
      const res = await post(payloadOf([person(`s-${role}`), gated(`v-${role}`, role)]));
      const body = assertError(res, 400, 'VALIDATION_ERROR');
      assert.equal(body.details[0].path, 'payload.recipients.1.verificationRequired');
      assert.match(body.error, new RegExp(`only a SIGNER or APPROVER.*${role}`));
    }
  });

  test('a balance that covers the envelope but not its verifications is refused (402) before the PDF is parsed', async () => {
    const c = await t.createCustomer(50);
    const notAPdf = [Buffer.from('not a PDF at all\n'.repeat(20))];
    // The envelope alone is affordable: the parse runs, and refuses the file.
    assertError(await post(payloadOf([person('poor')]), { apiKey: c.apiKey }, notAPdf), 400, 'INVALID_PDF');
    // With a gated signer the total is USD 0.60: refused before the parse would have looked at the file.
    const body = assertError(await post(payloadOf([gated('poor-gated')]), { apiKey: c.apiKey }, notAPdf), 402, 'INSUFFICIENT_BALANCE');
    assert.equal(body.priceMicros, 600_000);
    assert.deepEqual(await debits(c.id), []);
  });

  test('test mode: the envelope and each verification count one free send each, refused together when too few are left', async () => {
    const c = await t.createCustomer(0);
    const res = await post(payloadOf([gated('sandbox-a')]), { apiKey: c.testApiKey });
    assert.equal(res.statusCode, 201, res.body);
    assert.equal((await account(t, c.testApiKey)).sandboxUsed, 2);
    // One free send left, two needed: refused before the parse (the file is no PDF).
    await execSql(t, sql`UPDATE customers SET sandbox_limit = sandbox_used + 1 WHERE id = ${c.id}`);
    assertError(await post(payloadOf([gated('sandbox-b')]), { apiKey: c.testApiKey }, [Buffer.from('not a PDF\n'.repeat(40))]), 402, 'SANDBOX_LIMIT_REACHED');
    assert.equal((await account(t, c.testApiKey)).sandboxUsed, 2);
  });

  test('an envelope ending without completing refunds the verifications never confirmed', async () => {
    const c = await t.createCustomer(500);
    const alice = gated('refund-alice');
    const bob = gated('refund-bob');
    const env = (await post(payloadOf([alice, bob]), { apiKey: c.apiKey })).json() as Envelope;
    await drain(t);
    const token = recipientToken(env, alice.email);
    assert.equal((await confirmCode(token, await emailedCode(token, alice.email))).statusCode, 200);
    assert.equal((await account(t, c.apiKey)).creditsCents, 390);

    const del = await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(c.apiKey) });
    assert.equal(del.statusCode, 200, del.body);
    await drain(t);
    // The envelope (0.10) and Bob's unused verification (0.50) come back; Alice's confirmed one does not.
    const refunds = (await ledger(t, c.id)).filter((e) => e.direction === 'refund');
    assert.deepEqual(refunds.map((e) => e.amountMicros), [600_000n]);
    assert.equal((await account(t, c.apiKey)).creditsCents, 450);
    // Bob's pending verification ends with the envelope; Alice's stays verified.
    const statusOf = async (email: string) => {
      const id = (await getEnvelope(t, env.envelopeId, c.apiKey)).recipients.find((r) => r.email === email)!.verificationId;
      return (await t.app.inject({ url: `/v1/verifications/${id}`, headers: bearer(c.apiKey) })).json().status;
    };
    assert.equal(await statusOf(alice.email), 'verified');
    assert.equal(await statusOf(bob.email), 'canceled');
  });
});

describe('signing behind an emailed code', () => {
  test('nothing is shown or accepted until the code is confirmed; then signing completes and the certificate records it', async () => {
    const alice = gated('sign-alice');
    const carol = person('sign-carol', 'VIEWER');
    const env = (await post(payloadOf([alice, carol]))).json() as Envelope;
    await drain(t);
    const token = recipientToken(env, alice.email);

    // The session says a code is needed, and reveals no field and no document.
    const s = await session(t, token);
    assert.equal(s.statusCode, 200, s.body);
    const gatedSession = s.json();
    assert.deepEqual(gatedSession.verification, { required: true, verified: false, verifiedAt: null });
    assert.equal(gatedSession.canAct, false);
    assert.equal(gatedSession.reason, 'verification_required');
    // Nor the title or whose link it is: only where the code goes, masked.
    assert.equal(gatedSession.envelope.title, null);
    assert.deepEqual([gatedSession.recipient.name, gatedSession.recipient.email], [null, `${alice.email[0]}***${alice.email.slice(alice.email.indexOf('@'))}`]);
    assert.deepEqual([gatedSession.fields, gatedSession.pages, gatedSession.documentUrl], [[], [], null]);

    // The document, signing and declining are refused until then.
    assertError(await t.app.inject({ url: `/sign/${token}/document` }), 403, 'RECIPIENT_VERIFICATION_REQUIRED');
    assertError(await complete(t, token, { fields: [], signature: { kind: 'typed', text: 'Alice' } }), 403, 'RECIPIENT_VERIFICATION_REQUIRED');
    assertError(await reject(t, token, 'no'), 403, 'RECIPIENT_VERIFICATION_REQUIRED');

    // A recipient who is not gated has nothing to confirm.
    const carolToken = recipientToken(env, carol.email);
    assert.deepEqual((await session(t, carolToken)).json().verification, { required: false, verified: false, verifiedAt: null });
    assertError(await requestCode(carolToken), 409, 'INVALID_STATE');

    const code = await emailedCode(token, alice.email);
    const wrong = code === '000000' ? '111111' : '000000';
    const refused = assertError(await confirmCode(token, wrong), 400, 'INVALID_CODE');
    assert.equal(refused.attemptsLeft, 4);
    assert.equal((await session(t, token)).json().verification.verified, false);

    const confirmed = await confirmCode(token, code);
    assert.equal(confirmed.statusCode, 200, confirmed.body);
    const { verified, verifiedAt } = confirmed.json();
    assert.equal(verified, true);
    assert.ok(!Number.isNaN(Date.parse(verifiedAt)), verifiedAt);
    // Confirming again (a double click) changes nothing.
    assert.deepEqual((await confirmCode(token, code)).json(), { verified: true, verifiedAt });

    const open = (await session(t, token)).json();
    assert.deepEqual(open.verification, { required: true, verified: true, verifiedAt });
    assert.equal(open.canAct, true);
    assert.ok(open.fields.length > 0);
    assert.equal(open.documentUrl, `/sign/${token}/document`);
    const doc = await t.app.inject({ url: `/sign/${token}/document` });
    assert.equal(doc.statusCode, 200);
    assert.match(String(doc.headers['content-type']), /application\/pdf/);

    await signAs(t, token);
    await drain(t);
    const done = await getEnvelope(t, env.envelopeId);
    assert.equal(done.status, 'COMPLETED');

    // The audit trail: the engine event, then the certificate page of the sealed PDF.
    const events = await t.container.db.select().from(engineEvents).where(and(eq(engineEvents.documentId, env.engineEnvelopeId), eq(engineEvents.event, 'RECIPIENT_VERIFIED'))).orderBy(asc(engineEvents.id));
    assert.equal(events.length, 1);
    assert.equal(events[0].at.toISOString(), verifiedAt);
    const download = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(download.statusCode, 200);
    const certificate = certificateText(download.rawPayload);
    assert.ok(certificate.includes(`Email code sent to this address, confirmed ${utcTime(verifiedAt)}`), `${utcTime(verifiedAt)} in:\n${certificate}`);
    assert.match(certificate, /RECIPIENT_VERIFIED/);
    assert.equal(certificate.match(/Email code sent to this address/g)!.length, 1, 'only the gated recipient is marked');
  });

  test('before the code nothing is shown or recorded (no title, no names, no view, no envelope.viewed, no IP); the first read after it records the view', async () => {
    const bob = person('view-bob', 'SIGNER', { signingOrder: 1 });
    const alice = { ...gated('view-alice'), signingOrder: 2 };
    const env = (await post(payloadOf([bob, alice], { title: 'Secret merger' }))).json() as Envelope;
    await drain(t);
    const token = recipientToken(env, alice.email);

    for (let i = 0; i < 2; i++) {
      const s = await session(t, token);
      assert.equal(s.statusCode, 200, s.body);
      assert.equal(s.json().reason, 'verification_required');
      for (const secret of ['Secret merger', alice.name, alice.email, bob.name, bob.email, env.envelopeId]) assert.ok(!s.body.includes(secret), `${secret} in ${s.body}`);
    }
    const stored = (await getEnvelope(t, env.envelopeId)).recipients.find((r) => r.email === alice.email)!;
    assert.deepEqual([stored.readStatus, stored.viewedAt], ['NOT_OPENED', null]);
    // The recipients' events (the document's own, CREATED and SENT, aside).
    const engineEventsOf = async () =>
      (await t.container.db.select().from(engineEvents).where(eq(engineEvents.documentId, env.engineEnvelopeId)).orderBy(asc(engineEvents.id))).filter((e) => e.recipientId !== null).map((e) => [e.event, e.ip]);
    assert.deepEqual(await engineEventsOf(), []);
    assert.ok(!(await eventTypes(t, env.envelopeId)).includes('DOCUMENT_VIEWED'));

    const code = await emailedCode(token, alice.email);
    assert.equal((await confirmCode(token, code)).statusCode, 200);
    const open = (await session(t, token)).json();
    assert.equal(open.envelope.title, 'Secret merger');
    assert.equal(open.recipient.readStatus, 'OPENED');
    // Verified, then viewed; the view is the recipient's, with their address.
    assert.deepEqual(await engineEventsOf(), [
      ['RECIPIENT_VERIFIED', '127.0.0.1'],
      ['VIEWED', '127.0.0.1'],
    ]);
    assert.equal((await getEnvelope(t, env.envelopeId)).recipients.find((r) => r.email === alice.email)!.readStatus, 'OPENED');
    assert.equal(count(await eventTypes(t, env.envelopeId), 'DOCUMENT_VIEWED'), 1);
  });

  test('five wrong codes lock the recipient out for good (409 VERIFICATION_FAILED); the document stays closed', async () => {
    const alice = gated('lock-alice');
    const env = (await post(payloadOf([alice]))).json() as Envelope;
    const token = recipientToken(env, alice.email);
    const code = await emailedCode(token, alice.email);
    const wrong = ['000000', '111111', '222222', '333333', '444444', '555555'].filter((c) => c !== code);
    for (let i = 0; i < 4; i++) assert.equal(assertError(await confirmCode(token, wrong[i]), 400, 'INVALID_CODE').attemptsLeft, 4 - i);
    assertError(await confirmCode(token, wrong[4]), 409, 'VERIFICATION_FAILED');
    // Even the right code no longer opens it.
    assertError(await confirmCode(token, code), 409, 'VERIFICATION_FAILED');
    assertError(await t.app.inject({ url: `/sign/${token}/document` }), 403, 'RECIPIENT_VERIFICATION_REQUIRED');
    assert.equal((await session(t, token)).json().verification.verified, false);
  });
});
