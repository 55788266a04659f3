import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PDF } from '@libpdf/core';
import { bearer, createTestApp, type TestApp } from './harness.js';
import {
  account,
  assertError,
  createEnvelope,
  drain,
  type Envelope,
  envelopeBody,
  eventTypes,
  getEnvelope,
  ledger,
  ledgerFor,
  makePdf,
  multipart,
  newKey,
  invitationsTo,
  outbox,
  person,
  postMultipart,
  type Recipient,
  samplePdf,
  sigField,
  startAppWithSmtp,
  stopAppWithSmtp,
  toOf,
  uniq,
} from './fixtures/envelopes.js';
import type { TestSmtpServer } from './fixtures/smtp.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

let smtp: TestSmtpServer;
let t: TestApp;

before(async () => ({ smtp, t } = await startAppWithSmtp()));
after(() => stopAppWithSmtp(t, smtp));


/** Posts a create with the given parts/payload for a fresh customer; returns the response. */
async function post(payload: unknown, pdfs?: Uint8Array[], opts: Parameters<typeof postMultipart>[2] = {}) {
  return postMultipart(t, envelopeBody(pdfs ?? [await samplePdf()], payload), opts);
}

describe('create and send', () => {
  test('answers 201 PENDING with signing links, debits USD 0.10, then distributes by SMTP', async () => {
    const c = await t.createCustomer(500);
    const alice = person('alice');
    const res = await post(
      { title: 'Contract A', recipients: [alice], fields: [sigField(alice.email)], meta: { subject: 'Please sign Contract A', message: 'Thanks!' } },
      undefined,
      { apiKey: c.apiKey },
    );
    assert.equal(res.statusCode, 201, res.body);
    const env = res.json() as Envelope;
    assert.match(env.envelopeId, UUID);
    assert.equal(env.status, 'PENDING');
    assert.equal(env.title, 'Contract A');
    assert.equal(typeof env.engineEnvelopeId, 'string');
    assert.equal(env.detectedFromPlaceholders, false);
    assert.equal(env.recipients.length, 1);
    const r = env.recipients[0];
    assert.equal(r.email, alice.email);
    assert.equal(r.role, 'SIGNER');
    assert.match(r.signingUrl, t.documenso ? new RegExp(`^${t.documenso.origin}/sign/[A-Za-z0-9_-]+$`) : /^http:\/\/signet\.test\/sign\/[A-Za-z0-9_-]{43}$/);
    assert.equal(r.signingStatus, 'NOT_SIGNED');
    assert.equal(r.signedAt, null);
    assert.equal(env.fields.length, 1);
    assert.equal(Number.isInteger(env.fields[0].fieldId), true);
    assert.equal(env.fields[0].id, String(env.fields[0].fieldId));
    assert.equal(env.fields[0].positionXPercent, 10);
    assert.equal(env.fields[0].positionX, 10);

    const debits = await ledgerFor(t, env.envelopeId, 'debit');
    assert.equal(debits.length, 1);
    assert.equal(debits[0].amountMicros, 100_000n);
    assert.equal(debits[0].customerId, c.id);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);

    await drain(t);
    const sent = await getEnvelope(t, env.envelopeId, c.apiKey);
    assert.equal(sent.status, 'SENT');
    assert.deepEqual(
      sent.events!.map((e) => [e.eventType, e.event]),
      [['DOCUMENT_SENT', 'envelope.sent']],
    );
    assert.equal(sent.recipients[0].sendStatus, 'SENT');

    if (!t.documenso) {
      // Documenso writes its own invitations (its subject and message come from the create's meta).
      const mail = await smtp.waitFor((m) => toOf(m).includes(alice.email));
      assert.equal(mail.subject, 'Please sign Contract A');
      assert.ok(mail.text?.includes(r.signingUrl), mail.text);
      assert.ok(mail.text?.includes('Thanks!'));
    }
    assert.deepEqual(await invitationsTo(t, smtp, alice.email), { live: 1, test: 0 }, 'live mail must not go to the outbox');
  });

  test('Alt payload forms: positionX/width names and fields nested in recipients', async () => {
    const a = person('alt-a');
    const b = person('alt-b', 'APPROVER');
    const env = await createEnvelope(t, {
      recipients: [
        { ...a, fields: [{ type: 'SIGNATURE', page: 1, positionX: 5, positionY: 80, width: 20, height: 5 }] },
        { ...b, fields: [{ type: 'TEXT', page: 2, positionXPercent: 50, positionYPercent: 10, widthPercent: 30, heightPercent: 4 }] },
      ],
    });
    assert.equal(env.fields.length, 2);
    const fa = env.fields.find((f) => f.recipientEmail === a.email)!;
    assert.deepEqual(
      { type: fa.type, page: fa.page, x: fa.positionXPercent, y: fa.positionYPercent, w: fa.widthPercent, h: fa.heightPercent },
      { type: 'SIGNATURE', page: 1, x: 5, y: 80, w: 20, h: 5 },
    );
    const fb = env.fields.find((f) => f.recipientEmail === b.email)!;
    assert.deepEqual({ type: fb.type, page: fb.page, x: fb.positionX, y: fb.positionY, w: fb.width, h: fb.height }, { type: 'TEXT', page: 2, x: 50, y: 10, w: 30, h: 4 });
  });

  test('two pdf parts are joined: pages add up and a field on page 5 is accepted', async () => {
    const parts = [await makePdf(2), await makePdf(3)];
    const s = person('join');
    const env = await createEnvelope(t, { recipients: [s], fields: [sigField(s.email, { page: 5 })] }, { pdfs: parts });
    assert.equal(env.fields[0].page, 5);
    const original = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download?version=original`, headers: bearer(t.customer.apiKey) });
    assert.equal(original.statusCode, 200);
    assert.equal(original.headers['content-type'], 'application/pdf');
    const joined = await PDF.load(new Uint8Array(original.rawPayload));
    assert.equal(joined.getPageCount(), 5);

    const tooFar = await post({ recipients: [s], fields: [sigField(s.email, { page: 6 })] }, parts);
    const body = assertError(tooFar, 400, 'VALIDATION_ERROR');
    assert.equal(body.details[0].path, 'payload.fields.0.page');
  });

  test('idempotent replay: same key and body answer the same envelope and charge once', async () => {
    const c = await t.createCustomer(500);
    const s = person('idem');
    const mp = envelopeBody([await samplePdf()], { title: 'Idem', recipients: [s], fields: [sigField(s.email)] });
    const key = newKey();
    const first = await postMultipart(t, mp, { apiKey: c.apiKey, key });
    assert.equal(first.statusCode, 201, first.body);
    const second = await postMultipart(t, mp, { apiKey: c.apiKey, key });
    assert.equal(second.statusCode, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.json().envelopeId, first.json().envelopeId);
    assert.equal((await ledger(t, c.id)).filter((l) => l.direction === 'debit').length, 1);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);
    const list = await t.app.inject({ url: '/v1/envelopes', headers: bearer(c.apiKey) });
    assert.equal(list.json().total, 1);

    // The same key with another body is refused, not replayed.
    const other = await postMultipart(t, envelopeBody([await samplePdf()], { title: 'Other', recipients: [s], fields: [sigField(s.email)] }), { apiKey: c.apiKey, key });
    assertError(other, 422, 'IDEMPOTENCY_KEY_REUSED');
  });

  test('idempotent replay survives a new multipart boundary (clients pick a fresh one per request)', async () => {
    const c = await t.createCustomer(500);
    const s = person('idem-boundary');
    const payload = JSON.stringify({ title: 'Boundary', recipients: [s], fields: [sigField(s.email)] });
    const parts = [
      { name: 'pdf', value: await samplePdf(), filename: 'doc.pdf' },
      { name: 'payload', value: payload },
    ];
    const key = newKey();
    const first = await postMultipart(t, multipart(parts, '----boundary-one'), { apiKey: c.apiKey, key });
    assert.equal(first.statusCode, 201, first.body);
    const retry = await postMultipart(t, multipart(parts, '----boundary-two'), { apiKey: c.apiKey, key });
    assert.equal(retry.statusCode, 201, retry.body);
    assert.equal(retry.json().envelopeId, first.json().envelopeId);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);
  });

  test('test mode header: free, counted in sandboxUsed, invitation only in the outbox', async () => {
    const c = await t.createCustomer(500);
    const before = await account(t, c.apiKey);
    const s = person('sandbox');
    const env = await createEnvelope(t, { recipients: [s] }, { apiKey: c.apiKey, headers: { 'x-service-test-mode': 'true' } });
    assert.equal(env.status, 'PENDING');
    const after = await account(t, c.apiKey);
    assert.equal(after.creditsCents, before.creditsCents);
    assert.equal(after.sandboxUsed, before.sandboxUsed + 1);
    assert.equal((await ledger(t, c.id)).filter((l) => l.direction === 'debit').length, 0);
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId, c.apiKey)).status, 'SENT');
    if (!t.documenso) assert.ok((await outbox(t)).find((m) => toOf(m).includes(s.email))?.text?.includes(env.recipients[0].signingUrl));
    assert.deepEqual(await invitationsTo(t, smtp, s.email), { live: 0, test: 1 }, 'test-mode mail must not reach SMTP');
  });
});

describe('markers', () => {
  test('{{signature, r1}} places a SIGNATURE field for recipient 1 at the marker', async () => {
    const pdf = await makePdf([
      [
        { text: 'Sign here:', x: 72, y: 620 },
        { text: '{{signature, r1}}', x: 72, y: 600 },
      ],
      [{ text: '{{text, r2}}', x: 306, y: 396 }],
    ]);
    const a = person('mk-a');
    const b = person('mk-b', 'APPROVER');
    const env = await createEnvelope(t, { recipients: [a, b], fields: [] }, { pdfs: [pdf] });
    assert.equal(env.detectedFromPlaceholders, true);
    assert.equal(env.fields.length, 2);
    const sig = env.fields.find((f) => f.type === 'SIGNATURE')!;
    assert.equal(sig.recipientEmail, a.email);
    assert.equal(sig.page, 1);
    // 72 pt of 612 = 11.76 %; baseline 600 of 792 is 24.2 % from the top, the glyphs sit just above it.
    assert.ok(Math.abs(sig.positionXPercent - 11.76) < 1, `x ${sig.positionXPercent}`);
    assert.ok(sig.positionYPercent > 21 && sig.positionYPercent < 24.3, `y ${sig.positionYPercent}`);
    assert.ok(sig.widthPercent > 5 && sig.widthPercent < 40, `w ${sig.widthPercent}`);
    // Sized for signing, not to the marker's text: at least 4 % of the page tall and 15 % wide (README).
    assert.ok(sig.heightPercent >= 4 && sig.heightPercent < 5, `h ${sig.heightPercent}`);
    assert.ok(sig.widthPercent >= 15, `w ${sig.widthPercent}`);
    const text = env.fields.find((f) => f.type === 'TEXT')!;
    assert.equal(text.recipientEmail, b.email);
    assert.equal(text.page, 2);
    assert.ok(Math.abs(text.positionXPercent - 50) < 1, `x ${text.positionXPercent}`);
  });

  test('a marker naming r3 with two recipients, and an unknown marker type, are VALIDATION_ERROR', async () => {
    const a = person('mk3-a');
    const b = person('mk3-b');
    const r3 = await post({ recipients: [a, b], fields: [] }, [await makePdf([[{ text: '{{signature, r3}}', x: 72, y: 600 }]])]);
    const body3 = assertError(r3, 400, 'VALIDATION_ERROR');
    assert.equal(body3.details[0].path, 'pdf');
    assert.match(body3.error, /r3/);

    const bogus = await post({ recipients: [a], fields: [] }, [await makePdf([[{ text: '{{bogus, r1}}', x: 72, y: 600 }]])]);
    const bodyB = assertError(bogus, 400, 'VALIDATION_ERROR');
    assert.equal(bodyB.details[0].path, 'pdf');
    assert.match(bodyB.error, /bogus/);
  });
});

describe('create errors', () => {
  test('upload shape: MISSING_PDF, MISSING_PAYLOAD, INVALID_JSON, UNSUPPORTED_MEDIA_TYPE, IDEMPOTENCY_KEY_REQUIRED', async () => {
    const c = await t.createCustomer(500);
    const s = person('shape');
    const payload = JSON.stringify({ recipients: [s], fields: [sigField(s.email)] });
    const pdf = await samplePdf();

    assertError(await postMultipart(t, multipart([{ name: 'payload', value: payload }]), { apiKey: c.apiKey }), 400, 'MISSING_PDF');
    assertError(await postMultipart(t, multipart([{ name: 'pdf', value: pdf }]), { apiKey: c.apiKey }), 400, 'MISSING_PAYLOAD');
    assertError(await postMultipart(t, envelopeBody([pdf], '{"recipients": [oops'), { apiKey: c.apiKey }), 400, 'INVALID_JSON');
    const json = await t.app.inject({
      method: 'POST',
      url: '/v1/envelopes',
      headers: { ...bearer(c.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' },
      payload,
    });
    assertError(json, 415, 'UNSUPPORTED_MEDIA_TYPE');
    assertError(await postMultipart(t, envelopeBody([pdf], payload), { apiKey: c.apiKey, key: null }), 400, 'IDEMPOTENCY_KEY_REQUIRED');

    assert.equal((await account(t, c.apiKey)).creditsCents, 500, 'no error may charge');
    assert.equal((await t.app.inject({ url: '/v1/envelopes', headers: bearer(c.apiKey) })).json().total, 0);
  });

  test('VALIDATION_ERROR names the field path', async () => {
    const s = person('val');
    const cases: [string, unknown, string][] = [
      ['bad email', { recipients: [{ ...s, email: 'not-an-email' }] }, 'payload.recipients.0.email'],
      ['duplicate emails', { recipients: [s, { ...s, name: 'Again' }], fields: [sigField(s.email)] }, 'payload.recipients.1.email'],
      ['no SIGNER', { recipients: [{ ...s, role: 'CC' }], fields: [] }, 'payload.recipients'],
      ['page beyond the document', { recipients: [s], fields: [sigField(s.email, { page: 3 })] }, 'payload.fields.0.page'],
      ['x + width > 100', { recipients: [s], fields: [sigField(s.email, { positionXPercent: 90, widthPercent: 20 })] }, 'payload.fields.0.widthPercent'],
      ['unknown role', { recipients: [{ ...s, role: 'BOSS' }] }, 'payload.recipients.0.role'],
      ['no recipients', { recipients: [] }, 'payload.recipients'],
      ['unknown field type', { recipients: [s], fields: [sigField(s.email, { type: 'STAMP' })] }, 'payload.fields.0.type'],
    ];
    for (const [name, payload, path] of cases) {
      const res = await post(payload);
      const body = assertError(res, 400, 'VALIDATION_ERROR');
      assert.ok(Array.isArray(body.details), name);
      assert.equal(body.details[0].path, path, `${name}: ${res.body}`);
    }
  });

  test('RECIPIENT_NOT_FOUND when a field names someone not on the envelope', async () => {
    const s = person('rnf');
    assertError(await post({ recipients: [s], fields: [sigField(uniq('stranger'))] }), 404, 'RECIPIENT_NOT_FOUND');
  });

  test('OUT_OF_SCOPE_V1: 11 signers, or 11 pdf parts', async () => {
    const signers = Array.from({ length: 11 }, (_, i) => person(`many${i}`));
    assertError(await post({ recipients: signers, fields: [sigField(signers[0].email)] }), 400, 'OUT_OF_SCOPE_V1');
    // Ten signers plus CCs are within the limit.
    const ten = signers.slice(0, 10);
    const ok = await post({ recipients: [...ten, person('cc1', 'CC')], fields: ten.map((x) => sigField(x.email)) });
    assert.equal(ok.statusCode, 201, ok.body);

    const page = await makePdf(1);
    const s = person('parts');
    assertError(await post({ recipients: [s], fields: [sigField(s.email)] }, Array.from({ length: 11 }, () => page)), 400, 'OUT_OF_SCOPE_V1');
    const tenParts = await post({ recipients: [s], fields: [sigField(s.email, { page: 10 })] }, Array.from({ length: 10 }, () => page));
    assert.equal(tenParts.statusCode, 201, tenParts.body);
  });

  test('INVALID_PDF: a text file, a truncated PDF, an empty-looking header', async () => {
    const s = person('inv');
    const payload = { recipients: [s], fields: [sigField(s.email)] };
    assertError(await post(payload, [Buffer.from('just some text, not a PDF\n'.repeat(20))]), 400, 'INVALID_PDF');
    const whole = await makePdf(2);
    assertError(await post(payload, [whole.subarray(0, 120)]), 400, 'INVALID_PDF');
    assertError(await post(payload, [Buffer.from('%PDF-1.7\n%%EOF\n')]), 400, 'INVALID_PDF');
  });

  test('402 INSUFFICIENT_BALANCE for a customer with 5 cents; nothing is created', async () => {
    const poor = await t.createCustomer(5);
    const s = person('poor');
    const res = await post({ recipients: [s], fields: [sigField(s.email)] }, undefined, { apiKey: poor.apiKey });
    const body = assertError(res, 402, 'INSUFFICIENT_BALANCE');
    assert.equal(body.priceMicros, 100_000);
    assert.equal(body.balanceMicros, 50_000);
    assert.equal(body.retryable, false);
    assert.equal(typeof body.topUpUrl, 'string');
    assert.equal((await t.app.inject({ url: '/v1/envelopes', headers: bearer(poor.apiKey) })).json().total, 0);
    assert.equal((await account(t, poor.apiKey)).creditsCents, 5);
  });
});

describe('PDF size limit', () => {
  let small: TestApp;
  before(async () => {
    small = await createTestApp({ env: { MAX_PDF_BYTES: '20000' } });
  });
  after(() => small.close());

  test('an upload over MAX_PDF_BYTES is 413 PDF_TOO_LARGE; one under it is accepted', async () => {
    const s = person('size');
    const payload = { recipients: [s], fields: [sigField(s.email)] };
    const pdf = await makePdf(1);
    assert.ok(pdf.length < 20_000);
    const ok = await postMultipart(small, envelopeBody([pdf], payload));
    assert.equal(ok.statusCode, 201, ok.body);

    // A valid PDF followed by whitespace: over the limit, so refused before it is parsed.
    const padded = Buffer.concat([Buffer.from(pdf), Buffer.alloc(25_000, 0x20)]);
    const body = assertError(await postMultipart(small, envelopeBody([padded], payload)), 413, 'PDF_TOO_LARGE');
    assert.equal(body.maxBytes, 20_000);
    // Two parts each under the limit, together over it.
    const half = Buffer.concat([Buffer.from(pdf), Buffer.alloc(12_000, 0x20)]);
    assertError(await postMultipart(small, envelopeBody([half, half], payload)), 413, 'PDF_TOO_LARGE');
    // Far beyond the request body limit: stopped while reading, same answer.
    const huge = Buffer.concat([Buffer.from(pdf), Buffer.alloc(1_200_000, 0x20)]);
    assertError(await postMultipart(small, envelopeBody([huge], payload)), 413, 'PDF_TOO_LARGE');
  });
});

describe('drafts', () => {
  test('POST /v1/envelopes/draft: 201 DRAFT with engineNumericId, no charge, no email', async () => {
    const c = await t.createCustomer(500);
    const s = person('draft');
    const res = await postMultipart(t, envelopeBody([await samplePdf()], { title: 'Draft 1', recipients: [{ ...s, fields: [] }] }), { apiKey: c.apiKey, url: '/v1/envelopes/draft', key: null });
    assert.equal(res.statusCode, 201, res.body);
    const d = res.json();
    assert.match(d.envelopeId, UUID);
    assert.equal(d.status, 'DRAFT');
    assert.equal(d.title, 'Draft 1');
    assert.match(d.engineNumericId, /^\d+$/);
    assert.equal(typeof d.createdAt, 'string');
    assert.equal(d.recipients.length, 1);
    assert.deepEqual(d.fields, []);
    assert.equal((await ledger(t, c.id)).length, 1, 'only the opening credit');
    await drain(t);
    assert.equal((await getEnvelope(t, d.envelopeId, c.apiKey)).status, 'DRAFT');
    assert.deepEqual(await invitationsTo(t, smtp, s.email), { live: 0, test: 0 });
  });

  test('draft: true in the create payload drafts too', async () => {
    const c = await t.createCustomer(500);
    const s = person('draftflag');
    const env = await createEnvelope(t, { recipients: [s], draft: true }, { apiKey: c.apiKey });
    assert.equal(env.status, 'DRAFT');
    assert.equal((await account(t, c.apiKey)).creditsCents, 500);
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId, c.apiKey)).status, 'DRAFT');
    assert.deepEqual(await invitationsTo(t, smtp, s.email), { live: 0, test: 0 });
    // The send body is optional (SPEC: "optional JSON {meta}"): a bare POST sends it.
    const send = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${env.envelopeId}/send`, headers: { ...bearer(c.apiKey), 'idempotency-key': newKey() } });
    assert.equal(send.statusCode, 200, send.body);
    // A remote engine distributes after the commit (its job): the send answers PENDING, charged.
    assert.equal(send.json().status, t.documenso ? 'PENDING' : 'SENT');
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);
  });

  test('fields are added and removed on a DRAFT, then it is sent (charged) and frozen', async () => {
    const c = await t.createCustomer(500);
    const s = person('df');
    const headers = { ...bearer(c.apiKey), 'content-type': 'application/json' };
    const created = await postMultipart(t, envelopeBody([await samplePdf()], { recipients: [s] }), { apiKey: c.apiKey, url: '/v1/envelopes/draft' });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().envelopeId as string;
    const url = `/v1/envelopes/${id}/fields`;

    const add = await t.app.inject({ method: 'POST', url, headers, payload: { fields: [sigField(s.email), { ...sigField(s.email, { type: 'DATE', positionYPercent: 80 }) }] } });
    assert.equal(add.statusCode, 200, add.body);
    const added = add.json().fields as Envelope['fields'];
    assert.equal(added.length, 2);
    assert.ok(added.every((f) => Number.isInteger(f.fieldId) && f.recipientEmail === s.email));
    assert.deepEqual(added.map((f) => f.type), ['SIGNATURE', 'DATE']);
    assert.equal((await getEnvelope(t, id, c.apiKey)).fields.length, 2);

    const removed = await t.app.inject({ method: 'DELETE', url: `${url}/${added[1].fieldId}`, headers: bearer(c.apiKey) });
    assert.equal(removed.statusCode, 204, removed.body);
    assert.equal(removed.body, '');
    assert.deepEqual((await getEnvelope(t, id, c.apiKey)).fields.map((f) => f.fieldId), [added[0].fieldId]);
    // Removing it again: it is gone.
    assertError(await t.app.inject({ method: 'DELETE', url: `${url}/${added[1].fieldId}`, headers: bearer(c.apiKey) }), 400, 'INVALID_FIELD_ID');
    assertError(await t.app.inject({ method: 'DELETE', url: `${url}/abc`, headers: bearer(c.apiKey) }), 400, 'INVALID_FIELD_ID');
    assertError(await t.app.inject({ method: 'DELETE', url: `${url}/999999`, headers: bearer(c.apiKey) }), 400, 'INVALID_FIELD_ID');

    // Alt removal answer.
    const extra = await t.app.inject({ method: 'POST', url, headers, payload: { fields: [sigField(s.email, { type: 'TEXT' })] } });
    const altRemove = await t.app.inject({ method: 'DELETE', url: `${url}/${extra.json().fields[0].fieldId}?alt=1`, headers: bearer(c.apiKey) });
    assert.equal(altRemove.statusCode, 200);
    assert.deepEqual(altRemove.json(), { success: true });

    assertError(await t.app.inject({ method: 'POST', url, headers, payload: { fields: [sigField(uniq('nobody'))] } }), 404, 'RECIPIENT_NOT_FOUND');
    const badField = await t.app.inject({ method: 'POST', url, headers, payload: { fields: [sigField(s.email, { page: 9 })] } });
    assertError(badField, 400, 'VALIDATION_ERROR');
    const noEmail = await t.app.inject({ method: 'POST', url, headers, payload: { fields: [{ ...sigField(s.email), recipientEmail: undefined }] } });
    assertError(noEmail, 400, 'VALIDATION_ERROR');
    assert.equal((await account(t, c.apiKey)).creditsCents, 500, 'drafts and fields are free');

    // Send: needs an Idempotency-Key, charges USD 0.10, the draft becomes SENT and the invitation goes out.
    assertError(await t.app.inject({ method: 'POST', url: `/v1/envelopes/${id}/send`, headers, payload: {} }), 400, 'IDEMPOTENCY_KEY_REQUIRED');
    const send = await t.app.inject({
      method: 'POST',
      url: `/v1/envelopes/${id}/send`,
      headers: { ...headers, 'idempotency-key': newKey() },
      payload: { meta: { subject: 'Custom subject for the draft' } },
    });
    assert.equal(send.statusCode, 200, send.body);
    const sent = send.json();
    assert.equal(sent.envelopeId, id);
    assert.equal(sent.status, t.documenso ? 'PENDING' : 'SENT');
    assert.equal(sent.recipients.length, 1);
    assert.deepEqual(Object.keys(sent.recipients[0]).sort(), ['email', 'name', 'signingUrl']);
    assert.equal(sent.recipients[0].email, s.email);
    const debits = await ledgerFor(t, id, 'debit');
    assert.equal(debits.length, 1);
    assert.equal(debits[0].amountMicros, 100_000n);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);
    await drain(t);
    assert.ok((await eventTypes(t, id)).includes('DOCUMENT_SENT'));
    if (t.documenso) assert.equal(t.documenso.envelopes.get((await getEnvelope(t, id, c.apiKey)).engineEnvelopeId)?.envelope.documentMeta.subject, 'Custom subject for the draft');
    else {
      const mail = await smtp.waitFor((m) => toOf(m).includes(s.email));
      assert.equal(mail.subject, 'Custom subject for the draft');
      assert.ok(mail.text?.includes(sent.recipients[0].signingUrl));
    }
    assert.deepEqual(await invitationsTo(t, smtp, s.email), { live: 1, test: 0 });

    // Sent: no second send, no field changes.
    assertError(await t.app.inject({ method: 'POST', url: `/v1/envelopes/${id}/send`, headers: { ...headers, 'idempotency-key': newKey() }, payload: {} }), 400, 'ALREADY_COMPLETED');
    assertError(await t.app.inject({ method: 'POST', url, headers, payload: { fields: [sigField(s.email)] } }), 409, 'ENVELOPE_NOT_DRAFT');
    assertError(await t.app.inject({ method: 'DELETE', url: `${url}/${added[0].fieldId}`, headers: bearer(c.apiKey) }), 409, 'ENVELOPE_NOT_DRAFT');
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);
  });

  test('test mode is decided by the send: a free test send mails only the outbox, a paid send mails for real', async () => {
    const c = await t.createCustomer(500);
    // X-Service-Test-Mode has effect on create-and-send only (SPEC); a draft's send is free with a test key.
    const sendDraft = (id: string, apiKey: string) =>
      t.app.inject({
        method: 'POST',
        url: `/v1/envelopes/${id}/send`,
        headers: { ...bearer(apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' },
        payload: {},
      });

    // Drafted and sent with the test key: free, so no real email may go out.
    const a = person('draft-then-test');
    const draftA = await createEnvelope(t, { recipients: [a], draft: true }, { apiKey: c.testApiKey });
    const sentA = await sendDraft(draftA.envelopeId, c.testApiKey);
    assert.equal(sentA.statusCode, 200, sentA.body);
    assert.equal((await account(t, c.apiKey)).creditsCents, 500, 'a test send is free');
    await drain(t);
    assert.deepEqual(await invitationsTo(t, smtp, a.email), { live: 0, test: 1 }, 'a free test send must not reach a real mailbox');

    // Drafted in test mode, sent for real: paid, so the invitation must really go out.
    const b = person('test-then-live');
    const draftB = await createEnvelope(t, { recipients: [b], draft: true }, { apiKey: c.apiKey, headers: { 'x-service-test-mode': 'true' } });
    const sentB = await sendDraft(draftB.envelopeId, c.apiKey);
    assert.equal(sentB.statusCode, 200, sentB.body);
    assert.equal((await account(t, c.apiKey)).creditsCents, 490, 'a live send is charged');
    await drain(t);
    assert.deepEqual(await invitationsTo(t, smtp, b.email), { live: 1, test: 0 }, 'a paid send must reach the recipient');
  });

  test('sending a draft needs the balance', async () => {
    const poor = await t.createCustomer(5);
    const s = person('poordraft');
    const created = await postMultipart(t, envelopeBody([await samplePdf()], { recipients: [s], fields: [sigField(s.email)] }), { apiKey: poor.apiKey, url: '/v1/envelopes/draft' });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().envelopeId;
    const send = await t.app.inject({ method: 'POST', url: `/v1/envelopes/${id}/send`, headers: { ...bearer(poor.apiKey), 'idempotency-key': newKey(), 'content-type': 'application/json' }, payload: {} });
    assertError(send, 402, 'INSUFFICIENT_BALANCE');
    assert.equal((await getEnvelope(t, id, poor.apiKey)).status, 'DRAFT');
  });
});

describe('reads', () => {
  test('GET list: limit/offset, page/perPage, status filter, newest first; /v1/account/envelopes alike', async () => {
    const c = await t.createCustomer(500);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const s = person(`list${i}`);
      const env = await createEnvelope(t, { title: `L${i}`, recipients: [s], draft: i === 1 }, { apiKey: c.apiKey });
      ids.push(env.envelopeId);
    }
    const newest = [...ids].reverse();
    const get = (q: string, path = '/v1/envelopes') => t.app.inject({ url: `${path}${q}`, headers: bearer(c.apiKey) });

    const all = (await get('')).json();
    assert.deepEqual({ total: all.total, limit: all.limit, offset: all.offset }, { total: 3, limit: 20, offset: 0 });
    assert.deepEqual(all.data.map((e: Envelope) => e.envelopeId), newest);

    const p1 = (await get('?limit=2&offset=0')).json();
    assert.deepEqual(p1.data.map((e: Envelope) => e.envelopeId), newest.slice(0, 2));
    assert.deepEqual({ total: p1.total, limit: p1.limit, offset: p1.offset }, { total: 3, limit: 2, offset: 0 });
    const p2 = (await get('?limit=2&offset=2')).json();
    assert.deepEqual(p2.data.map((e: Envelope) => e.envelopeId), newest.slice(2));

    const alt = (await get('?page=2&perPage=2')).json();
    assert.deepEqual(Object.keys(alt).sort(), ['data', 'page', 'perPage', 'total']);
    assert.deepEqual({ page: alt.page, perPage: alt.perPage, total: alt.total }, { page: 2, perPage: 2, total: 3 });
    assert.deepEqual(alt.data.map((e: Envelope) => e.envelopeId), newest.slice(2));

    const drafts = (await get('?status=DRAFT')).json();
    assert.equal(drafts.total, 1);
    assert.equal(drafts.data[0].envelopeId, ids[1]);
    assert.equal(drafts.data[0].status, 'DRAFT');
    const pending = (await get('?status=PENDING')).json();
    assert.deepEqual(pending.data.map((e: Envelope) => e.envelopeId), [ids[2], ids[0]]);

    const history = (await get('?limit=1', '/v1/account/envelopes')).json();
    assert.equal(history.total, 3);
    assert.equal(history.data[0].envelopeId, ids[2]);

    assertError(await get('?limit=0'), 400, 'VALIDATION_ERROR');
    assertError(await get('?limit=101'), 400, 'VALIDATION_ERROR');
    assertError(await get('?status=NOPE'), 400, 'VALIDATION_ERROR');
  });

  test('GET /{id} has events; GET /{id}/status is the live shape', async () => {
    const s = person('detail');
    const env = await createEnvelope(t, { title: 'Detail', recipients: [s] });
    await drain(t);
    const d = await getEnvelope(t, env.envelopeId);
    assert.equal(d.status, 'SENT');
    assert.equal(d.events!.length, 1);
    assert.equal(d.events![0].eventType, 'DOCUMENT_SENT');
    assert.equal(d.events![0].recipientEmail, null);
    assert.ok(!Number.isNaN(Date.parse(d.events![0].occurredAt)));
    assert.equal(typeof d.updatedAt, 'string');
    assert.equal(typeof d.storageExpiresAt, 'string');

    const live = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/status`, headers: bearer(t.customer.apiKey) });
    assert.equal(live.statusCode, 200, live.body);
    const l = live.json();
    assert.deepEqual(Object.keys(l).sort(), ['completedAt', 'createdAt', 'envelopeId', 'recipients', 'status', 'title']);
    assert.deepEqual({ id: l.envelopeId, status: l.status, title: l.title, completedAt: l.completedAt }, { id: env.envelopeId, status: 'SENT', title: 'Detail', completedAt: null });
    assert.equal(l.recipients[0].email, s.email);
    assert.equal(l.recipients[0].sendStatus, 'SENT');
  });

  test("another customer's envelope is 404 ENVELOPE_NOT_FOUND on every route; so is a non-uuid id", async () => {
    const owner = await t.createCustomer(500);
    const s = person('owned');
    const env = await createEnvelope(t, { recipients: [s] }, { apiKey: owner.apiKey });
    const draft = await postMultipart(t, envelopeBody([await samplePdf()], { recipients: [s], fields: [sigField(s.email)] }), { apiKey: owner.apiKey, url: '/v1/envelopes/draft' });
    const draftId = draft.json().envelopeId as string;
    const fieldId = draft.json().fields[0].fieldId as number;
    const intruder = await t.createCustomer(500);

    const routes = (id: string) =>
      [
        ['GET', `/v1/envelopes/${id}`],
        ['GET', `/v1/envelopes/${id}/status`],
        ['DELETE', `/v1/envelopes/${id}`],
        ['POST', `/v1/envelopes/${id}/send`],
        ['POST', `/v1/envelopes/${id}/resend`],
        ['GET', `/v1/envelopes/${id}/download`],
        ['GET', `/v1/envelopes/${id}/download?version=original`],
        ['POST', `/v1/envelopes/${id}/fields`],
        ['DELETE', `/v1/envelopes/${id}/fields/${fieldId}`],
      ] as const;
    for (const id of [env.envelopeId, draftId, 'not-a-uuid', '00000000-0000-0000-0000-000000000000']) {
      for (const [method, url] of routes(id)) {
        const res = await t.app.inject({
          method,
          url,
          headers: { ...bearer(intruder.apiKey), 'idempotency-key': newKey(), ...(method === 'POST' ? { 'content-type': 'application/json' } : {}) },
          ...(url.endsWith('/fields') ? { payload: { fields: [sigField(s.email)] } } : method === 'POST' ? { payload: {} } : {}),
        });
        assertError(res, 404, 'ENVELOPE_NOT_FOUND');
      }
    }
    // The owner's envelopes are untouched.
    assert.equal((await getEnvelope(t, env.envelopeId, owner.apiKey)).status, 'PENDING');
    const d = await getEnvelope(t, draftId, owner.apiKey);
    assert.equal(d.status, 'DRAFT');
    assert.equal(d.fields.length, 1);
    assert.equal((await account(t, intruder.apiKey)).creditsCents, 500);
  });

  test('a test key sees only test envelopes and a live key only live ones', async () => {
    const c = await t.createCustomer(500);
    const s = person('modes');
    const live = await createEnvelope(t, { recipients: [s] }, { apiKey: c.apiKey });
    const test = await createEnvelope(t, { recipients: [s] }, { apiKey: c.testApiKey });
    const listLive = (await t.app.inject({ url: '/v1/envelopes', headers: bearer(c.apiKey) })).json();
    const listTest = (await t.app.inject({ url: '/v1/envelopes', headers: bearer(c.testApiKey) })).json();
    assert.deepEqual(listLive.data.map((e: Envelope) => e.envelopeId), [live.envelopeId]);
    assert.deepEqual(listTest.data.map((e: Envelope) => e.envelopeId), [test.envelopeId]);
    assertError(await t.app.inject({ url: `/v1/envelopes/${test.envelopeId}`, headers: bearer(c.apiKey) }), 404, 'ENVELOPE_NOT_FOUND');
    assertError(await t.app.inject({ url: `/v1/envelopes/${live.envelopeId}`, headers: bearer(c.testApiKey) }), 404, 'ENVELOPE_NOT_FOUND');
    assert.equal((await getEnvelope(t, test.envelopeId, c.testApiKey)).envelopeId, test.envelopeId);
    // The test key's envelope was free; its invitation goes to the outbox only.
    assert.equal((await account(t, c.apiKey)).creditsCents, 490);
    await drain(t);
    assert.deepEqual(await invitationsTo(t, smtp, s.email), { live: 1, test: 1 }, 'only the live invitation reaches SMTP');
  });
});
