import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { enqueue } from '../src/jobs/queue.js';
import { REFUND_JOB } from '../src/modules/billing/billing.jobs.js';
import { bearer, testEngine, type TestApp } from './harness.js';
import {
  account,
  assertError,
  complete,
  count,
  createEnvelope,
  drain,
  eventTypes,
  getEnvelope,
  type Envelope,
  jobsOfType,
  openAs,
  ledgerFor,
  person,
  PNG_DATA_URL,
  type Recipient,
  recipientToken,
  refundsFor,
  reject,
  rejectAs,
  session,
  sigField,
  signAs,
  startAppWithSmtp,
  stopAppWithSmtp,
  toOf,
  uniq,
} from './fixtures/envelopes.js';
import type { TestSmtpServer } from './fixtures/smtp.js';

const hasPdfsig = spawnSync('pdfsig', ['-v']).error === undefined;

let smtp: TestSmtpServer;
let t: TestApp;

before(async () => ({ smtp, t } = await startAppWithSmtp()));
after(() => stopAppWithSmtp(t, smtp));

const mailsTo = (email: string) => smtp.messages.filter((m) => toOf(m).includes(email.toLowerCase()));

/**
 * TEST_SIGNING_ENGINE=documenso: recipients sign in Documenso (the stand-in), so what is about Signet's own
 * signing page (its session, its validation, its link answers) or Signet's own mail and seal is checked on
 * the local engine only; the state changes, events and refunds they cause are checked on both.
 */
const signetPage = { skip: testEngine === 'documenso' ? "Signet's signing page: Documenso hosts its own" : false };
/** The stand-in's copy of a recipient (Documenso's side of the envelope). */
const remoteRecipient = (env: Envelope, email: string) => t.documenso!.envelopes.get(env.engineEnvelopeId)!.envelope.recipients.find((r) => r.email === email)!;


/** pdfsig's report on a PDF. */
function pdfsig(bytes: Uint8Array): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-pdfsig-'));
  try {
    const file = path.join(dir, 'signed.pdf');
    writeFileSync(file, bytes);
    const out = spawnSync('pdfsig', [file], { encoding: 'utf8' });
    return `${out.stdout}\n${out.stderr}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('session', () => {
  test('opening the link twice records one view', async () => {
    const s = person('viewed-once');
    const env = await createEnvelope(t, { recipients: [s] });
    await drain(t);
    const token = recipientToken(env, s.email);
    await openAs(t, token);
    await openAs(t, token);
    const stored = await getEnvelope(t, env.envelopeId);
    assert.equal(stored.recipients[0].readStatus, 'OPENED');
    assert.ok(stored.recipients[0].viewedAt, 'viewedAt is set');
    const viewed = stored.events!.filter((e) => e.eventType === 'DOCUMENT_VIEWED');
    assert.deepEqual(viewed.map((e) => [e.recipientEmail, e.event]), [[s.email, 'envelope.viewed']]);
  });

  test('opening the link records the view once and describes what to do', signetPage, async () => {
    const s = person('viewer-once');
    const env = await createEnvelope(t, { title: 'Session', recipients: [s], meta: { redirectUrl: 'https://example.com/done' } });
    await drain(t);
    const token = recipientToken(env, s.email);

    const first = await session(t, token);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.headers['cache-control'], 'no-store');
    const body = first.json();
    assert.equal(body.envelope.status, 'SENT');
    assert.equal(body.envelope.title, 'Session');
    assert.deepEqual(body.recipient, { name: s.name, email: s.email, role: 'SIGNER', status: 'PENDING', readStatus: 'OPENED' });
    assert.equal(body.canAct, true);
    assert.equal(body.reason, null);
    assert.deepEqual(body.waitingFor, []);
    assert.deepEqual(body.fields.map((f: { fieldId: number; type: string }) => [f.fieldId, f.type]), [[env.fields[0].fieldId, 'SIGNATURE']]);
    assert.equal(body.pages.length, 2);
    assert.equal(body.documentUrl, `/sign/${token}/document`);
    assert.equal(body.redirectUrl, 'https://example.com/done');

    const second = await session(t, token);
    assert.equal(second.statusCode, 200);
    const stored = await getEnvelope(t, env.envelopeId);
    assert.equal(stored.recipients[0].readStatus, 'OPENED');
    assert.ok(stored.recipients[0].viewedAt);
    const viewed = stored.events!.filter((e) => e.eventType === 'DOCUMENT_VIEWED');
    assert.equal(viewed.length, 1);
    assert.equal(viewed[0].recipientEmail, s.email);
    assert.equal(viewed[0].event, 'envelope.viewed');

    const doc = await t.app.inject({ url: `/sign/${token}/document` });
    assert.equal(doc.statusCode, 200);
    assert.equal(doc.headers['content-type'], 'application/pdf');
    assert.equal(doc.rawPayload.subarray(0, 5).toString(), '%PDF-');
  });

  test('unknown, malformed and draft links are 404 SIGNING_LINK_INVALID', signetPage, async () => {
    const unknown = randomBytes(32).toString('base64url');
    assertError(await session(t, unknown), 404, 'SIGNING_LINK_INVALID');
    assertError(await complete(t, unknown, { fields: [] }), 404, 'SIGNING_LINK_INVALID');
    assertError(await reject(t, unknown, 'no'), 404, 'SIGNING_LINK_INVALID');
    assertError(await t.app.inject({ url: `/sign/${unknown}/document` }), 404, 'SIGNING_LINK_INVALID');
    assertError(await session(t, 'short'), 404, 'SIGNING_LINK_INVALID');

    const s = person('draft-link');
    const draft = await createEnvelope(t, { recipients: [s], draft: true });
    const token = recipientToken(draft, s.email);
    assertError(await session(t, token), 404, 'SIGNING_LINK_INVALID');
    assertError(await complete(t, token, { fields: [], signature: { kind: 'typed', text: 'S' } }), 404, 'SIGNING_LINK_INVALID');
  });
});

describe('signing order, completion and sealing', () => {
  test('signer 2 waits for signer 1; both sign; the sealed PDF is valid and the CC gets it', async () => {
    const s1 = person('ord1', 'SIGNER', { signingOrder: 1 });
    const s2 = person('ord2', 'SIGNER', { signingOrder: 2 });
    const cc = person('ordcc', 'CC');
    const env = await createEnvelope(t, {
      title: 'Ordered Agreement',
      recipients: [s1, s2, cc],
      fields: [sigField(s1.email), sigField(s2.email, { positionYPercent: 80 }), sigField(s2.email, { type: 'TEXT', positionYPercent: 50 })],
    });
    await drain(t);
    const t1 = recipientToken(env, s1.email);
    const t2 = recipientToken(env, s2.email);
    if (t.documenso) {
      assert.equal(remoteRecipient(env, s1.email).sendStatus, 'SENT');
      assert.equal(remoteRecipient(env, s2.email).sendStatus, 'NOT_SENT', 'signer 2 is not invited before signer 1 signed');
      await assert.rejects(signAs(t, t2), /out of turn/);
      await signAs(t, t1);
    } else {
      const invite1 = await smtp.waitFor((m) => toOf(m).includes(s1.email));
      assert.ok(invite1.text?.includes(`/sign/${t1}`));
      assert.equal(mailsTo(s2.email).length, 0, 'signer 2 is not invited before signer 1 signed');
      assert.equal(mailsTo(cc.email).length, 0, 'a CC is not invited');

      const early = (await session(t, t2)).json();
      assert.equal(early.canAct, false);
      assert.equal(early.reason, 'waiting');
      assert.deepEqual(early.waitingFor, [{ name: s1.name, email: s1.email }]);
      const tooEarly = await complete(t, t2, { fields: [], signature: { kind: 'typed', text: 'Person ord2' } });
      assertError(tooEarly, 409, 'NOT_YOUR_TURN');

      assert.deepEqual(await signAs(t, t1), { status: 'SIGNED', redirectUrl: null });
      assertError(await complete(t, t1, { fields: [], signature: { kind: 'drawn', image: PNG_DATA_URL } }), 409, 'ALREADY_ACTED');
    }
    const partial = await getEnvelope(t, env.envelopeId);
    assert.equal(partial.status, 'PARTIALLY_SIGNED');
    const r1 = partial.recipients.find((r) => r.email === s1.email)!;
    assert.equal(r1.signingStatus, 'SIGNED');
    assert.equal(r1.status, 'SIGNED');
    assert.ok(r1.signedAt);

    await drain(t);
    if (t.documenso) assert.equal(remoteRecipient(env, s2.email).sendStatus, 'SENT');
    else {
      const invite2 = await smtp.waitFor((m) => toOf(m).includes(s2.email));
      assert.ok(invite2.text?.includes(`/sign/${t2}`));
      assert.equal((await session(t, t2)).json().canAct, true);
    }
    await signAs(t, t2, { TEXT: 'Agreed' });
    await drain(t);

    const done = await getEnvelope(t, env.envelopeId);
    assert.equal(done.status, 'COMPLETED');
    assert.ok(done.completedAt);
    const types = done.events!.map((e) => e.eventType);
    assert.equal(count(types, 'DOCUMENT_SENT'), 1);
    assert.equal(count(types, 'DOCUMENT_SIGNED'), 2);
    assert.equal(count(types, 'DOCUMENT_COMPLETED'), 1);
    assert.deepEqual(
      done.events!.filter((e) => e.eventType === 'DOCUMENT_SIGNED').map((e) => e.recipientEmail),
      [s1.email, s2.email],
    );
    assert.equal(types.at(-1), 'DOCUMENT_COMPLETED');

    const live = (await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/status`, headers: bearer(t.customer.apiKey) })).json();
    assert.equal(live.status, 'COMPLETED');
    assert.ok(live.completedAt);

    const dl = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(dl.statusCode, 200, dl.body);
    assert.equal(dl.headers['content-type'], 'application/pdf');
    assert.match(String(dl.headers['content-disposition']), /attachment; filename="Ordered_Agreement-signed\.pdf"/);
    const signed = dl.rawPayload;
    assert.equal(signed.subarray(0, 5).toString(), '%PDF-');
    // Documenso seals with its own certificate and mails the CC itself.
    if (t.documenso) return;
    if (hasPdfsig) assert.match(pdfsig(signed), /Signature is Valid\./);

    const ccMail = await smtp.waitFor((m) => toOf(m).includes(cc.email) && m.attachments.length > 0);
    assert.equal(ccMail.attachments.length, 1);
    assert.equal(ccMail.attachments[0].contentType, 'application/pdf');
    assert.ok(Buffer.compare(ccMail.attachments[0].content, signed) === 0, 'the CC gets the sealed PDF');
    assert.equal(mailsTo(s1.email).filter((m) => m.attachments.length === 1).length, 1, 'signers get it too');

    // The link now shows the completed envelope; nothing more can be signed.
    const after = (await session(t, t1)).json();
    assert.equal(after.envelope.status, 'COMPLETED');
    assert.equal(after.canAct, false);
    assert.equal(after.reason, 'completed');
    // The last signature sent again (its answer lost with a node, say) is told it took effect, not that the envelope ended.
    assertError(await complete(t, t2, { fields: [], signature: { kind: 'typed', text: 'x' } }), 409, 'ALREADY_ACTED');
    const signedDoc = await t.app.inject({ url: `/sign/${t1}/document` });
    assert.ok(Buffer.compare(signedDoc.rawPayload, signed) === 0, 'the link serves the sealed PDF once completed');
  });

  test('an APPROVER acts before signers are notified', async () => {
    const approver = person('appr', 'APPROVER');
    const s = person('appr-signer');
    const env = await createEnvelope(t, { recipients: [approver, s], fields: [sigField(s.email)] });
    await drain(t);
    const ta = recipientToken(env, approver.email);
    const ts = recipientToken(env, s.email);
    if (t.documenso) {
      // Documenso orders an approver by its signing order only: parallel recipients may act in any order.
      await signAs(t, ta);
      const mid = await getEnvelope(t, env.envelopeId);
      assert.equal(mid.status, 'SENT', 'an approval is not a signature');
      assert.equal(mid.recipients.find((r) => r.email === approver.email)!.signingStatus, 'SIGNED');
      assert.equal(count(mid.events!.map((e) => e.eventType), 'DOCUMENT_SIGNED'), 0);
      await signAs(t, ts);
      assert.equal((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');
      return;
    }
    await smtp.waitFor((m) => toOf(m).includes(approver.email));
    assert.equal(mailsTo(s.email).length, 0);

    const waiting = (await session(t, ts)).json();
    assert.equal(waiting.reason, 'waiting');
    assert.deepEqual(waiting.waitingFor, [{ name: approver.name, email: approver.email }]);
    assertError(await complete(t, ts, { fields: [], signature: { kind: 'typed', text: 'S' } }), 409, 'NOT_YOUR_TURN');

    const a = (await session(t, ta)).json();
    assert.equal(a.canAct, true);
    assert.deepEqual(a.fields, []);
    const approved = await complete(t, ta, { fields: [] });
    assert.equal(approved.statusCode, 200, approved.body);
    assert.equal(approved.json().status, 'APPROVED');
    const mid = await getEnvelope(t, env.envelopeId);
    assert.equal(mid.status, 'SENT', 'an approval is not a signature');
    assert.equal(count(mid.events!.map((e) => e.eventType), 'DOCUMENT_SIGNED'), 0);

    await drain(t);
    const invite = await smtp.waitFor((m) => toOf(m).includes(s.email));
    assert.ok(invite.text?.includes(`/sign/${ts}`));
    assert.equal((await session(t, ts)).json().canAct, true);
  });

  test('a VIEWER can open the document but not complete or reject', signetPage, async () => {
    const s = person('v-signer');
    const viewer = person('v-viewer', 'VIEWER');
    const env = await createEnvelope(t, { recipients: [s, viewer], fields: [sigField(s.email)] });
    await drain(t);
    const mail = await smtp.waitFor((m) => toOf(m).includes(viewer.email));
    const tv = recipientToken(env, viewer.email);
    assert.ok(mail.text?.includes(`/sign/${tv}`));
    const v = await session(t, tv);
    assert.equal(v.statusCode, 200);
    assert.equal(v.json().canAct, false);
    assert.equal(v.json().reason, 'view_only');
    assert.equal((await t.app.inject({ url: `/sign/${tv}/document` })).statusCode, 200);
    assertError(await complete(t, tv, { fields: [] }), 403, 'FORBIDDEN');
    assertError(await reject(t, tv, 'I do not like it'), 403, 'FORBIDDEN');
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'SENT');
  });
});

describe('complete validation', () => {
  test('required TEXT, numeric NUMBER, own fields only, a signature, a real image', signetPage, async () => {
    const s = person('val');
    const other = person('val-other');
    const env = await createEnvelope(t, {
      recipients: [s, other],
      fields: [
        sigField(s.email),
        sigField(s.email, { type: 'TEXT', positionYPercent: 10 }),
        sigField(s.email, { type: 'NUMBER', positionYPercent: 20, required: false }),
        sigField(other.email),
      ],
    });
    await drain(t);
    const token = recipientToken(env, s.email);
    const fields = (await session(t, token)).json().fields as { fieldId: number; type: string }[];
    const id = (type: string) => fields.find((f) => f.type === type)!.fieldId;
    const sig = { kind: 'drawn', image: PNG_DATA_URL };

    const missingText = assertError(await complete(t, token, { fields: [{ fieldId: id('NUMBER'), value: '3' }], signature: sig }), 400, 'VALIDATION_ERROR');
    assert.equal(missingText.details[0].path, `body.fields[fieldId=${id('TEXT')}]`);
    const nan = assertError(await complete(t, token, { fields: [{ fieldId: id('TEXT'), value: 'x' }, { fieldId: id('NUMBER'), value: 'abc' }], signature: sig }), 400, 'VALIDATION_ERROR');
    assert.equal(nan.details[0].path, `body.fields[fieldId=${id('NUMBER')}]`);
    const unknown = assertError(await complete(t, token, { fields: [{ fieldId: 999_999, value: 'x' }], signature: sig }), 400, 'VALIDATION_ERROR');
    assert.equal(unknown.details[0].path, 'body.fields.0.fieldId');
    const othersField = env.fields.find((f) => f.recipientEmail === other.email)!.fieldId;
    assertError(await complete(t, token, { fields: [{ fieldId: othersField, value: 'x' }], signature: sig }), 400, 'VALIDATION_ERROR');
    const noSig = assertError(await complete(t, token, { fields: [{ fieldId: id('TEXT'), value: 'x' }] }), 400, 'VALIDATION_ERROR');
    assert.equal(noSig.details[0].path, 'body.signature');
    const notImage = { kind: 'drawn', image: `data:image/png;base64,${Buffer.from('not a png at all').toString('base64')}` };
    assertError(await complete(t, token, { fields: [{ fieldId: id('TEXT'), value: 'x' }], signature: notImage }), 400, 'VALIDATION_ERROR');
    assertError(await complete(t, token, { fields: [{ fieldId: 'one' }] }), 400, 'VALIDATION_ERROR');

    // Nothing was recorded by the failed attempts.
    const still = (await session(t, token)).json();
    assert.equal(still.canAct, true);
    assert.equal(still.recipient.status, 'PENDING');
    assert.equal(count(await eventTypes(t, env.envelopeId), 'DOCUMENT_SIGNED'), 0);

    const ok = await complete(t, token, { fields: [{ fieldId: id('TEXT'), value: 'Hello' }, { fieldId: id('NUMBER'), value: '-12.5' }], signature: { kind: 'typed', text: 'Person val' } });
    assert.equal(ok.statusCode, 200, ok.body);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'PARTIALLY_SIGNED');
  });
});

describe('reject and cancel', () => {
  test('reject ends REJECTED with the reason, tells the others, and refunds exactly once', async () => {
    const c = await t.createCustomer(500);
    const s1 = person('rej1');
    const s2 = person('rej2');
    const env = await createEnvelope(t, { recipients: [s1, s2] }, { apiKey: c.apiKey });
    await drain(t);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);
    const t1 = recipientToken(env, s1.email);

    if (t.documenso) await rejectAs(t, t1, 'The terms are wrong');
    else {
      assertError(await reject(t, t1, '   '), 400, 'VALIDATION_ERROR');
      const res = await reject(t, t1, 'The terms are wrong');
      assert.equal(res.statusCode, 200, res.body);
      assert.deepEqual(res.json(), { status: 'REJECTED' });
    }

    const stored = await getEnvelope(t, env.envelopeId, c.apiKey);
    assert.equal(stored.status, 'REJECTED');
    const r1 = stored.recipients.find((r) => r.email === s1.email)!;
    assert.equal(r1.signingStatus, 'REJECTED');
    assert.equal(r1.status, 'REJECTED');
    assert.equal(r1.rejectionReason, 'The terms are wrong');
    assert.ok(r1.rejectedAt);
    const rejected = stored.events!.filter((e) => e.eventType === 'DOCUMENT_REJECTED');
    assert.equal(rejected.length, 1);
    assert.equal(rejected[0].recipientEmail, s1.email);
    assert.equal(rejected[0].event, 'envelope.rejected');

    await drain(t);
    await drain(t);
    const refunds = await ledgerFor(t, env.envelopeId, 'refund');
    assert.equal(refunds.length, 1);
    assert.equal(refunds[0].amountMicros, 100_000n);
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);
    const [refund] = await refundsFor(t, env.envelopeId);
    assert.equal(refund.status, 'succeeded');
    // The refund job running again (a crash after crediting) credits nothing more.
    await t.container.db.transaction((tx) => enqueue(tx, { type: REFUND_JOB, payload: { refundId: refund.id } }));
    await drain(t);
    assert.equal((await ledgerFor(t, env.envelopeId, 'refund')).length, 1);
    // Reads that reconcile, and a DELETE of the rejected envelope, do not refund again.
    assert.equal((await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/status`, headers: bearer(c.apiKey) })).json().status, 'REJECTED');
    // SPEC: DELETE moves any state but COMPLETED to CANCELLED, a rejected envelope included.
    const del = await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(c.apiKey) });
    assert.equal(del.statusCode, 200);
    assert.equal((await getEnvelope(t, env.envelopeId, c.apiKey)).status, 'CANCELLED');
    await drain(t);
    assert.equal((await ledgerFor(t, env.envelopeId, 'refund')).length, 1);
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);
    // Documenso tells the others itself.
    if (t.documenso) return;

    const declined = await smtp.waitFor((m) => toOf(m).includes(s2.email) && /Declined/.test(m.subject ?? ''));
    assert.ok(declined.text?.includes('The terms are wrong'));
    const t2 = recipientToken(env, s2.email);
    assertError(await complete(t, t2, { fields: [], signature: { kind: 'typed', text: 'x' } }), 410, 'ENVELOPE_NOT_ACTIVE');
    assert.equal((await session(t, t2)).json().reason, 'cancelled');
    // The decline sent again is told it took effect, whatever the envelope became since.
    assertError(await reject(t, t1, 'The terms are wrong'), 409, 'ALREADY_ACTED');
  });

  test('after a cancel the link answers 410 ENVELOPE_NOT_ACTIVE on complete', async () => {
    const s = person('cancelled');
    const env = await createEnvelope(t, { recipients: [s] });
    await drain(t);
    const del = await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) });
    assert.equal(del.statusCode, 200, del.body);
    if (t.documenso) {
      // Documenso's link ends with its envelope: cancelled there by the cancel's job after the commit,
      // and signing it is refused.
      await drain(t);
      assert.equal(t.documenso.envelopes.get(env.engineEnvelopeId)!.envelope.status, 'CANCELLED');
      await assert.rejects(signAs(t, recipientToken(env, s.email)));
      assert.equal((await getEnvelope(t, env.envelopeId)).status, 'CANCELLED');
      return;
    }
    const token = recipientToken(env, s.email);
    assertError(await complete(t, token, { fields: [], signature: { kind: 'drawn', image: PNG_DATA_URL } }), 410, 'ENVELOPE_NOT_ACTIVE');
    assertError(await reject(t, token, 'late'), 410, 'ENVELOPE_NOT_ACTIVE');
    const s2 = (await session(t, token)).json();
    assert.equal(s2.canAct, false);
    assert.equal(s2.reason, 'cancelled');
    assert.equal(s2.envelope.status, 'CANCELLED');
    await drain(t);
    const notice = await smtp.waitFor((m) => toOf(m).includes(s.email) && /Cancelled/.test(m.subject ?? ''));
    assert.ok(notice.text?.includes('no longer works'));
  });
});

describe('concurrency', () => {
  test('two parallel signers completing at once: both 200, COMPLETED once', async () => {
    const a = person('race-a');
    const b = person('race-b');
    const env = await createEnvelope(t, { recipients: [a, b] });
    await drain(t);
    const ta = recipientToken(env, a.email);
    const tb = recipientToken(env, b.email);
    if (t.documenso) {
      // Both recipients' webhooks arrive at once; each applies the whole live state under the envelope's lock.
      await Promise.all([signAs(t, ta), signAs(t, tb)]);
      const done = await getEnvelope(t, env.envelopeId);
      assert.equal(done.status, 'COMPLETED');
      const types = done.events!.map((e) => e.eventType);
      assert.equal(count(types, 'DOCUMENT_SIGNED'), 2);
      assert.equal(count(types, 'DOCUMENT_COMPLETED'), 1);
      return;
    }
    const fa = (await session(t, ta)).json().fields.map((f: { fieldId: number }) => ({ fieldId: f.fieldId }));
    const fb = (await session(t, tb)).json().fields.map((f: { fieldId: number }) => ({ fieldId: f.fieldId }));
    const [ra, rb] = await Promise.all([
      complete(t, ta, { fields: fa, signature: { kind: 'drawn', image: PNG_DATA_URL } }),
      complete(t, tb, { fields: fb, signature: { kind: 'typed', text: 'Person race-b' } }),
    ]);
    assert.equal(ra.statusCode, 200, ra.body);
    assert.equal(rb.statusCode, 200, rb.body);
    await drain(t);
    const done = await getEnvelope(t, env.envelopeId);
    assert.equal(done.status, 'COMPLETED');
    const types = done.events!.map((e) => e.eventType);
    assert.equal(count(types, 'DOCUMENT_SIGNED'), 2);
    assert.equal(count(types, 'DOCUMENT_COMPLETED'), 1);
    const seals = (await jobsOfType(t, 'engine.seal')).filter((j) => (j.payload as { documentId: string }).documentId === env.engineEnvelopeId);
    assert.equal(seals.length, 1);
    assert.equal(seals[0].status, 'done');
  });
});
