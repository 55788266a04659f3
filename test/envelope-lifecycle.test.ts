import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { auditLog } from '../src/db/schema/index.js';
import { OPS_TOKEN, bearer, type TestApp } from './harness.js';
import {
  account,
  assertError,
  complete,
  count,
  createEnvelope,
  drain,
  type Envelope,
  envelopeBody,
  eventTypes,
  execSql,
  getEnvelope,
  inTx,
  ledgerFor,
  newKey,
  outbox,
  person,
  PNG_DATA_URL,
  postMultipart,
  type Recipient,
  recipientToken,
  refundsFor,
  samplePdf,
  session,
  sigField,
  signAs,
  startAppWithSmtp,
  stopAppWithSmtp,
  toOf,
  uniq,
} from './fixtures/envelopes.js';
import type { TestSmtpServer } from './fixtures/smtp.js';


let smtp: TestSmtpServer;
let t: TestApp;

before(async () => ({ smtp, t } = await startAppWithSmtp()));
after(() => stopAppWithSmtp(t, smtp));

const mailsTo = (email: string) => smtp.messages.filter((m) => toOf(m).includes(email.toLowerCase()));


const del = (id: string, apiKey = t.customer.apiKey) => t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${id}`, headers: bearer(apiKey) });
const resend = (id: string, apiKey = t.customer.apiKey) => t.app.inject({ method: 'POST', url: `/v1/envelopes/${id}/resend`, headers: bearer(apiKey) });
const download = (id: string, q = '', apiKey = t.customer.apiKey) => t.app.inject({ url: `/v1/envelopes/${id}/download${q}`, headers: bearer(apiKey) });
const liveStatus = (id: string, apiKey = t.customer.apiKey) => t.app.inject({ url: `/v1/envelopes/${id}/status`, headers: bearer(apiKey) });

/** Creates, distributes and has every signer sign; the envelope is COMPLETED on return. */
async function completedEnvelope(apiKey = t.customer.apiKey): Promise<Envelope> {
  const s = person('done');
  const env = await createEnvelope(t, { title: 'Done deal', recipients: [s] }, { apiKey });
  await drain(t);
  await signAs(t, recipientToken(env, s.email));
  await drain(t);
  const done = await getEnvelope(t, env.envelopeId, apiKey);
  assert.equal(done.status, 'COMPLETED');
  return done;
}

describe('cancel', () => {
  test('DELETE cancels: {success: true}, event, links dead, refund exactly once, audit row', async () => {
    const c = await t.createCustomer(500);
    const s = person('del');
    const env = await createEnvelope(t, { recipients: [s] }, { apiKey: c.apiKey });
    await drain(t);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);

    const res = await del(env.envelopeId, c.apiKey);
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { success: true });
    const stored = await getEnvelope(t, env.envelopeId, c.apiKey);
    assert.equal(stored.status, 'CANCELLED');
    assert.deepEqual(stored.events!.map((e) => e.eventType), ['DOCUMENT_SENT', 'DOCUMENT_CANCELLED']);
    assert.equal(stored.events![1].event, 'envelope.cancelled');

    // A second DELETE is harmless and refunds nothing more.
    const again = await del(env.envelopeId, c.apiKey);
    assert.equal(again.statusCode, 200, again.body);
    await drain(t);
    await drain(t);
    const refunds = await ledgerFor(t, env.envelopeId, 'refund');
    assert.equal(refunds.length, 1);
    assert.equal(refunds[0].amountMicros, 100_000n);
    assert.equal(refunds[0].customerId, c.id);
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);
    assert.equal(count(await eventTypes(t, env.envelopeId), 'DOCUMENT_CANCELLED'), 1);
    const [refund] = await refundsFor(t, env.envelopeId);
    assert.equal(refund.status, 'succeeded');

    assert.equal((await smtp.waitFor((m) => toOf(m).includes(s.email) && /Cancelled/.test(m.subject ?? ''))).subject?.startsWith('Cancelled'), true);
    const token = recipientToken(env, s.email);
    assertError(await complete(t, token, { fields: [], signature: { kind: 'drawn', image: PNG_DATA_URL } }), 410, 'ENVELOPE_NOT_ACTIVE');

    const audit = await t.container.db.select().from(auditLog).where(and(eq(auditLog.resourceId, env.envelopeId), eq(auditLog.action, 'envelope.cancel')));
    assert.ok(audit.length >= 1);
    assert.equal(audit[0].customerId, c.id);
  });

  test('cancelling a PENDING envelope before distribution sends nothing; a DRAFT has nothing to refund', async () => {
    const c = await t.createCustomer(500);
    const s = person('early-cancel');
    const env = await createEnvelope(t, { recipients: [s] }, { apiKey: c.apiKey });
    assert.equal((await del(env.envelopeId, c.apiKey)).statusCode, 200);
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId, c.apiKey)).status, 'CANCELLED');
    assert.equal(mailsTo(s.email).length, 0, 'no invitation after the cancel');
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);

    const d = person('draft-cancel');
    const draft = await createEnvelope(t, { recipients: [d], draft: true }, { apiKey: c.apiKey });
    assert.equal((await del(draft.envelopeId, c.apiKey)).statusCode, 200);
    await drain(t);
    const stored = await getEnvelope(t, draft.envelopeId, c.apiKey);
    assert.equal(stored.status, 'CANCELLED');
    assert.equal((await refundsFor(t, draft.envelopeId)).length, 0);
    assert.equal((await ledgerFor(t, draft.envelopeId)).length, 0);
    assertError(
      await t.app.inject({
        method: 'POST',
        url: `/v1/envelopes/${draft.envelopeId}/send`,
        headers: { ...bearer(c.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' },
        payload: {},
      }),
      400,
      'ENVELOPE_CANCELLED',
    );
    assert.equal((await account(t, c.apiKey)).creditsCents, 500, 'a refused send charges nothing');
  });

  test('a draft sent and then cancelled gets the send charge back', async () => {
    const c = await t.createCustomer(500);
    const s = person('sent-draft');
    const draft = await createEnvelope(t, { recipients: [s], draft: true }, { apiKey: c.apiKey });
    const send = await t.app.inject({
      method: 'POST',
      url: `/v1/envelopes/${draft.envelopeId}/send`,
      headers: { ...bearer(c.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' },
      payload: {},
    });
    assert.equal(send.statusCode, 200, send.body);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);
    assert.equal((await del(draft.envelopeId, c.apiKey)).statusCode, 200);
    await drain(t);
    const refunds = await ledgerFor(t, draft.envelopeId, 'refund');
    assert.equal(refunds.length, 1);
    assert.equal(refunds[0].amountMicros, 100_000n);
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);
  });

  test('a COMPLETED envelope: DELETE 400 CANNOT_DELETE_COMPLETED, resend 400 ENVELOPE_ALREADY_COMPLETE, no refund', async () => {
    const done = await completedEnvelope();
    assertError(await del(done.envelopeId), 400, 'CANNOT_DELETE_COMPLETED');
    assertError(await resend(done.envelopeId), 400, 'ENVELOPE_ALREADY_COMPLETE');
    assert.equal((await getEnvelope(t, done.envelopeId)).status, 'COMPLETED');
    const ops = await t.app.inject({ method: 'POST', url: `/ops/envelopes/${done.envelopeId}/cancel`, headers: bearer(OPS_TOKEN) });
    assertError(ops, 400, 'CANNOT_DELETE_COMPLETED');
    await drain(t);
    assert.equal((await refundsFor(t, done.envelopeId)).length, 0);
    const dl = await download(done.envelopeId);
    assert.equal(dl.statusCode, 200);
    assert.equal(dl.rawPayload.subarray(0, 5).toString(), '%PDF-');
  });

  test('operator cancel: CANCELLED, refunded, listed in /ops/refunds', async () => {
    const c = await t.createCustomer(500);
    const s = person('ops');
    const env = await createEnvelope(t, { recipients: [s] }, { apiKey: c.apiKey });
    await drain(t);
    assertError(await t.app.inject({ method: 'POST', url: `/ops/envelopes/${env.envelopeId}/cancel`, headers: bearer(c.apiKey) }), 401, 'UNAUTHORIZED');
    assertError(await t.app.inject({ method: 'POST', url: `/ops/envelopes/${randomUUIDLike()}/cancel`, headers: bearer(OPS_TOKEN) }), 404, 'ENVELOPE_NOT_FOUND');

    const res = await t.app.inject({ method: 'POST', url: `/ops/envelopes/${env.envelopeId}/cancel`, headers: bearer(OPS_TOKEN) });
    assert.equal(res.statusCode, 200, res.body);
    assert.deepEqual(res.json(), { envelopeId: env.envelopeId, status: 'CANCELLED' });
    const stored = await getEnvelope(t, env.envelopeId, c.apiKey);
    assert.equal(stored.status, 'CANCELLED');
    assert.equal(count(stored.events!.map((e) => e.eventType), 'DOCUMENT_CANCELLED'), 1);
    await drain(t);
    assert.equal((await ledgerFor(t, env.envelopeId, 'refund')).length, 1);
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);

    const list = await t.app.inject({ url: '/ops/refunds?limit=100', headers: bearer(OPS_TOKEN) });
    assert.equal(list.statusCode, 200, list.body);
    const row = list.json().data.find((r: { envelopeId: string }) => r.envelopeId === env.envelopeId);
    assert.ok(row, 'the refund is listed');
    assert.equal(row.status, 'succeeded');
    assert.equal(row.amountMicros, 100_000);
    assert.equal(row.customerId, c.id);
    const succeeded = (await t.app.inject({ url: '/ops/refunds?status=succeeded&limit=100', headers: bearer(OPS_TOKEN) })).json();
    assert.ok(succeeded.data.some((r: { envelopeId: string }) => r.envelopeId === env.envelopeId));
    const failed = (await t.app.inject({ url: '/ops/refunds?status=failed&limit=100', headers: bearer(OPS_TOKEN) })).json();
    assert.ok(!failed.data.some((r: { envelopeId: string }) => r.envelopeId === env.envelopeId));
    assertError(await t.app.inject({ url: '/ops/refunds', headers: bearer(c.apiKey) }), 401, 'UNAUTHORIZED');
  });
});

function randomUUIDLike(): string {
  const h = randomBytes(16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20)}`;
}

describe('resend', () => {
  test('reminds only unsigned recipients whose turn it is', async () => {
    const s1 = person('rs1', 'SIGNER', { signingOrder: 1 });
    const s2 = person('rs2', 'SIGNER', { signingOrder: 2 });
    const s3 = person('rs3', 'SIGNER', { signingOrder: 3 });
    const env = await createEnvelope(t, { title: 'Remind me', recipients: [s1, s2, s3] });
    await drain(t);

    const first = await resend(env.envelopeId);
    assert.equal(first.statusCode, 200, first.body);
    assert.deepEqual(first.json(), { success: true, resentTo: [{ name: s1.name, email: s1.email }] });
    await drain(t);
    const reminder = await smtp.waitFor((m) => toOf(m).includes(s1.email) && /^Reminder/.test(m.subject ?? ''));
    assert.ok(reminder.text?.includes(`/sign/${recipientToken(env, s1.email)}`));
    assert.equal(mailsTo(s2.email).length, 0);

    await signAs(t, recipientToken(env, s1.email));
    await drain(t);
    const second = await resend(env.envelopeId);
    assert.equal(second.statusCode, 200, second.body);
    assert.deepEqual(second.json().resentTo, [{ name: s2.name, email: s2.email }]);
    await drain(t);
    assert.equal(mailsTo(s1.email).filter((m) => /^Reminder/.test(m.subject ?? '')).length, 1, 'a signer who signed is not reminded');
    assert.equal(mailsTo(s2.email).filter((m) => /^Reminder/.test(m.subject ?? '')).length, 1);
    assert.equal(mailsTo(s3.email).length, 0);
  });

  test('a resend before distribution does not swallow the invitation', async () => {
    const s = person('rs-early');
    const env = await createEnvelope(t, { recipients: [s], meta: { subject: 'Invitation: early resend' } });
    assert.equal(env.status, 'PENDING');
    const res = await resend(env.envelopeId);
    assert.ok(res.statusCode < 500, res.body);
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'SENT');
    const invitation = await smtp.waitFor((m) => toOf(m).includes(s.email) && m.subject === 'Invitation: early resend', 2_000);
    assert.ok(invitation.text?.includes(env.recipients[0].signingUrl));
  });

  test('ALL_SIGNED while sealing is pending; ENVELOPE_CANCELLED after a cancel', async () => {
    const s = person('allsigned');
    const env = await createEnvelope(t, { recipients: [s] });
    await drain(t);
    await signAs(t, recipientToken(env, s.email));
    // The seal job has not run: every signer signed but the envelope is not COMPLETED yet.
    assert.notEqual((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');
    assertError(await resend(env.envelopeId), 400, 'ALL_SIGNED');
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');

    const c = person('rs-cancel');
    const cancelled = await createEnvelope(t, { recipients: [c] });
    await drain(t);
    await del(cancelled.envelopeId);
    assertError(await resend(cancelled.envelopeId), 400, 'ENVELOPE_CANCELLED');
  });

  test('a cancel that wins the race with sealing is respected', async () => {
    const c = await t.createCustomer(500);
    const s = person('race-cancel');
    const env = await createEnvelope(t, { recipients: [s] }, { apiKey: c.apiKey });
    await drain(t);
    await signAs(t, recipientToken(env, s.email));
    assert.equal((await del(env.envelopeId, c.apiKey)).statusCode, 200);
    await drain(t);
    const stored = await getEnvelope(t, env.envelopeId, c.apiKey);
    assert.equal(stored.status, 'CANCELLED');
    assert.equal(count(stored.events!.map((e) => e.eventType), 'DOCUMENT_COMPLETED'), 0);
    assertError(await download(env.envelopeId, '', c.apiKey), 400, 'ENVELOPE_NOT_COMPLETE');
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);
  });
});

describe('download', () => {
  test('the signed PDF only once COMPLETED; the original any time', async () => {
    const s = person('dl');
    const env = await createEnvelope(t, { title: 'Download me', recipients: [s] });
    assertError(await download(env.envelopeId), 400, 'ENVELOPE_NOT_COMPLETE');
    assertError(await download(env.envelopeId, '?version=signed'), 400, 'ENVELOPE_NOT_COMPLETE');
    assertError(await download(env.envelopeId, '?version=latest'), 400, 'VALIDATION_ERROR');
    const original = await download(env.envelopeId, '?version=original');
    assert.equal(original.statusCode, 200, original.body);
    assert.equal(original.headers['content-type'], 'application/pdf');
    assert.match(String(original.headers['content-disposition']), /filename="Download_me\.pdf"/);
    assert.equal(original.rawPayload.subarray(0, 5).toString(), '%PDF-');
    // Streamed from storage with the stored file's length.
    assert.equal(Number(original.headers['content-length']), original.rawPayload.length);

    const draft = await createEnvelope(t, { recipients: [s], draft: true });
    assert.equal((await download(draft.envelopeId, '?version=original')).statusCode, 200);
    assertError(await download(draft.envelopeId), 400, 'ENVELOPE_NOT_COMPLETE');
  });
});

describe('expiry and retention', () => {
  test('an envelope past its signing window expires: EXPIRED, event, refund, dead links', async () => {
    const c = await t.createCustomer(500);
    const s = person('exp');
    const env = await createEnvelope(t, { recipients: [s] }, { apiKey: c.apiKey });
    const keep = await createEnvelope(t, { recipients: [person('exp-keep')] }, { apiKey: c.apiKey });
    await drain(t);
    await execSql(t, sql`UPDATE envelopes SET expires_at = now() - interval '1 minute' WHERE id = ${env.envelopeId}`);
    const n = await inTx(t, (tx) => t.container.envelopes.expireDue(tx));
    assert.equal(n, 1);

    const stored = await getEnvelope(t, env.envelopeId, c.apiKey);
    assert.equal(stored.status, 'EXPIRED');
    assert.equal(count(stored.events!.map((e) => e.eventType), 'DOCUMENT_EXPIRED'), 1);
    assert.equal(stored.events!.at(-1)!.event, 'envelope.expired');
    assert.equal((await getEnvelope(t, keep.envelopeId, c.apiKey)).status, 'SENT');
    assert.equal((await liveStatus(env.envelopeId, c.apiKey)).json().status, 'EXPIRED');

    await drain(t);
    assert.equal((await ledgerFor(t, env.envelopeId, 'refund')).length, 1);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490, 'one refund; the other envelope stays paid');
    // Running the task again finds nothing more to do.
    assert.equal(await inTx(t, (tx) => t.container.envelopes.expireDue(tx)), 0);

    const token = recipientToken(env, s.email);
    assertError(await complete(t, token, { fields: [], signature: { kind: 'drawn', image: PNG_DATA_URL } }), 410, 'ENVELOPE_NOT_ACTIVE');
    assert.equal((await session(t, token)).json().reason, 'expired');
  });

  test('expiresAt in the payload is kept; one in the past is VALIDATION_ERROR', async () => {
    const s = person('exp-at');
    const at = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const env = await createEnvelope(t, { recipients: [s], expiresAt: at, storageExpiryDays: 10 });
    assert.equal(env.expiresAt, at);
    const storage = Date.parse(String(env.storageExpiresAt));
    assert.ok(Math.abs(storage - (Date.now() + 10 * 86_400_000)) < 60_000, String(env.storageExpiresAt));
    const past = await postMultipart(t, envelopeBody([await samplePdf()], { recipients: [s], fields: [sigField(s.email)], expiresAt: new Date(Date.now() - 60_000).toISOString() }));
    const body = assertError(past, 400, 'VALIDATION_ERROR');
    assert.equal(body.details[0].path, 'payload.expiresAt');
  });

  test('documents past storageExpiresAt are purged: downloads answer 410 DOCUMENT_PURGED', async () => {
    const done = await completedEnvelope();
    assert.equal((await download(done.envelopeId)).statusCode, 200);
    await execSql(t, sql`UPDATE envelopes SET storage_expires_at = now() - interval '1 minute' WHERE id = ${done.envelopeId}`);
    assert.equal(await inTx(t, (tx) => t.container.envelopes.purgeDue(tx)), 1);
    assertError(await download(done.envelopeId), 410, 'DOCUMENT_PURGED');
    assertError(await download(done.envelopeId, '?version=original'), 410, 'DOCUMENT_PURGED');
    const token = recipientToken(done, done.recipients[0].email);
    assertError(await t.app.inject({ url: `/sign/${token}/document` }), 410, 'DOCUMENT_PURGED');
    // The record stays.
    const stored = await getEnvelope(t, done.envelopeId);
    assert.equal(stored.status, 'COMPLETED');
    assert.equal(await inTx(t, (tx) => t.container.envelopes.purgeDue(tx)), 0);
  });
});

describe('reconciliation', () => {
  test('a view the stored copy missed: GET /status returns the engine truth and corrects the copy', async () => {
    const s = person('recon');
    const env = await createEnvelope(t, { recipients: [s] });
    await drain(t);
    await execSql(t, sql`UPDATE engine_recipients SET read_status = 'OPENED', viewed_at = now() WHERE document_id = ${env.engineEnvelopeId}`);

    const stale = await getEnvelope(t, env.envelopeId);
    assert.equal(stale.recipients[0].readStatus, 'NOT_OPENED', 'the stored copy has not seen it yet');
    assert.equal(count(stale.events!.map((e) => e.eventType), 'DOCUMENT_VIEWED'), 0);

    const live = await liveStatus(env.envelopeId);
    assert.equal(live.statusCode, 200, live.body);
    assert.equal(live.json().recipients[0].readStatus, 'OPENED');
    assert.ok(live.json().recipients[0].viewedAt);

    const fixed = await getEnvelope(t, env.envelopeId);
    assert.equal(fixed.recipients[0].readStatus, 'OPENED');
    assert.ok(fixed.recipients[0].viewedAt);
    const viewed = fixed.events!.filter((e) => e.eventType === 'DOCUMENT_VIEWED');
    assert.equal(viewed.length, 1);
    assert.equal(viewed[0].recipientEmail, s.email);
    // A second read finds nothing new.
    await liveStatus(env.envelopeId);
    assert.equal(count(await eventTypes(t, env.envelopeId), 'DOCUMENT_VIEWED'), 1);
  });

  test('a status change the stored copy missed: the engine wins, with its event and refund', async () => {
    const c = await t.createCustomer(500);
    const s = person('recon-status');
    const env = await createEnvelope(t, { recipients: [s] }, { apiKey: c.apiKey });
    await drain(t);
    await execSql(t, sql`UPDATE engine_documents SET status = 'CANCELLED' WHERE id = ${env.engineEnvelopeId}`);
    assert.equal((await getEnvelope(t, env.envelopeId, c.apiKey)).status, 'SENT');
    const live = await liveStatus(env.envelopeId, c.apiKey);
    assert.equal(live.json().status, 'CANCELLED');
    const stored = await getEnvelope(t, env.envelopeId, c.apiKey);
    assert.equal(stored.status, 'CANCELLED');
    assert.equal(count(stored.events!.map((e) => e.eventType), 'DOCUMENT_CANCELLED'), 1);
    await drain(t);
    assert.equal((await ledgerFor(t, env.envelopeId, 'refund')).length, 1);
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);
  });
});

describe('test mode', () => {
  test('X-Service-Test-Mode: true is free, counts sandboxUsed, mails only the outbox, and refunds nothing', async () => {
    const c = await t.createCustomer(500);
    const before = await account(t, c.apiKey);
    const s = person('tm');
    const env = await createEnvelope(t, { recipients: [s] }, { apiKey: c.apiKey, headers: { 'x-service-test-mode': 'true' } });
    const after = await account(t, c.apiKey);
    assert.equal(after.creditsCents, before.creditsCents);
    assert.equal(after.sandboxUsed, before.sandboxUsed + 1);
    assert.equal((await ledgerFor(t, env.envelopeId)).length, 0);
    await drain(t);
    const inOutbox = (await outbox(t)).filter((m) => toOf(m).includes(s.email));
    assert.equal(inOutbox.length, 1);
    assert.ok(inOutbox[0].text?.includes(env.recipients[0].signingUrl));
    assert.equal(mailsTo(s.email).length, 0);

    // Signing a test envelope works end to end; its mail stays in the outbox too.
    await signAs(t, recipientToken(env, s.email));
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId, c.apiKey)).status, 'COMPLETED');
    assert.equal(mailsTo(s.email).length, 0);
    assert.ok((await outbox(t)).filter((m) => toOf(m).includes(s.email)).length >= 2);

    const other = await createEnvelope(t, { recipients: [person('tm2')] }, { apiKey: c.apiKey, headers: { 'x-service-test-mode': 'true' } });
    assert.equal((await del(other.envelopeId, c.apiKey)).statusCode, 200);
    await drain(t);
    assert.equal((await refundsFor(t, other.envelopeId)).length, 0, 'nothing was charged, nothing is refunded');
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);
  });
});
