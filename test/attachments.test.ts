/**
 * Signer attachments (issue 37, item 4): a FILE field takes a PDF, PNG or JPEG uploaded by its signer,
 * checked and decoded in the sandbox (wrong magic, a type mismatch, oversize, a PDF decompression bomb
 * and a PNG pixel bomb refused with their codes), stored with its SHA-256, replaced without leaving
 * the old blob, required before completion, listed and downloaded by the sender only, printed on the
 * sealed certificate, carried by the completion email, and deleted by retention's purge.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';
import { PDF } from '@libpdf/core';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError, completeOnly, consent, createEnvelope, drain, envelopeBody, multipart, person, PNG_DATA_URL, postMultipart, recipientToken, samplePdf, session, sigField, type Envelope } from './fixtures/envelopes.js';
import * as fx from './fixtures/pdfs.js';

const MAX = 512 * 1024;
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

const fileField = (email: string, extra: Record<string, unknown> = {}) => ({ ...sigField(email), type: 'FILE', positionYPercent: 40, heightPercent: 4, ...extra });

function upload(t: TestApp, token: string, fieldId: number, bytes: Uint8Array, contentType: string, filename = 'file.bin') {
  const mp = multipart([{ name: 'file', value: bytes, filename, contentType }]);
  return t.app.inject({ method: 'POST', url: `/sign/${token}/attachments/${fieldId}`, headers: { 'content-type': mp.contentType }, payload: mp.body });
}

/** Blob keys under the document's attachments prefix. */
async function attachmentBlobs(t: TestApp, env: Envelope): Promise<string[]> {
  const keys: string[] = [];
  for await (const b of t.container.storage.list!(`documents/${env.engineEnvelopeId}/attachments/`)) keys.push(b.key);
  return keys;
}

describe('signer attachments (FILE fields)', () => {
  let t: TestApp;
  let env: Envelope;
  let token: string;
  let fileIds: number[];
  let sigId: number;
  const signer = person('attach');
  let pdfBytes: Uint8Array;

  before(async () => {
    // 64 MB workers: a stream may expand to 32 MB before the decode guard refuses it.
    t = await createTestApp({ env: { PDF_PARSE_MAX_MEMORY_MB: '64', SIGNER_ATTACHMENT_MAX_BYTES: String(MAX), SIGNER_ATTACHMENTS_EMAIL_MAX_BYTES: String(4 * MAX) } });
    env = await createEnvelope(t, {
      title: 'Attachments',
      recipients: [signer],
      fields: [sigField(signer.email), fileField(signer.email), fileField(signer.email, { positionYPercent: 50, required: false })],
    });
    token = recipientToken(env, signer.email);
    const fields = (await session(t, token)).json().fields as { fieldId: number; type: string; attachment?: unknown }[];
    fileIds = fields.filter((f) => f.type === 'FILE').map((f) => f.fieldId);
    sigId = fields.find((f) => f.type === 'SIGNATURE')!.fieldId;
    assert.equal(fileIds.length, 2);
    assert.ok(fields.filter((f) => f.type === 'FILE').every((f) => f.attachment === null), 'no attachment yet');
    pdfBytes = await fx.plainPdf(2, 'An identity document');
  });
  after(() => t?.close());

  test('before consent an upload is refused (CONSENT_REQUIRED); an unknown token is 404', async () => {
    assertError(await upload(t, token, fileIds[0], pdfBytes, 'application/pdf', 'id.pdf'), 409, 'CONSENT_REQUIRED');
    assertError(await upload(t, 'A'.repeat(43), fileIds[0], pdfBytes, 'application/pdf'), 404, 'SIGNING_LINK_INVALID');
    assert.equal((await consent(t, token)).statusCode, 200);
  });

  test('a required FILE field blocks completion until a file is attached', async () => {
    const res = await completeOnly(t, token, { fields: [], signature: { kind: 'drawn', image: PNG_DATA_URL } });
    const body = assertError(res, 400, 'VALIDATION_ERROR');
    assert.match(body.error, /FILE is required/);
  });

  test('wrong magic, a type mismatch, oversize, a non-FILE field: refused with their codes, nothing stored', async () => {
    assertError(await upload(t, token, fileIds[0], fx.notPdf(), 'application/pdf', 'a.pdf'), 415, 'ATTACHMENT_TYPE_UNSUPPORTED');
    assertError(await upload(t, token, fileIds[0], fx.signaturePng(), 'application/pdf', 'a.pdf'), 422, 'ATTACHMENT_TYPE_MISMATCH');
    assertError(await upload(t, token, fileIds[0], pdfBytes, 'text/plain', 'a.txt'), 415, 'ATTACHMENT_TYPE_UNSUPPORTED');
    const big = new Uint8Array(MAX + 1);
    big.set(pdfBytes.subarray(0, 16));
    assertError(await upload(t, token, fileIds[0], big, 'application/pdf', 'big.pdf'), 413, 'ATTACHMENT_TOO_LARGE');
    assertError(await upload(t, token, sigId, pdfBytes, 'application/pdf', 'a.pdf'), 400, 'INVALID_FIELD_TYPE');
    assertError(await upload(t, token, 999_999, pdfBytes, 'application/pdf', 'a.pdf'), 400, 'VALIDATION_ERROR');
    assert.deepEqual(await attachmentBlobs(t, env), []);
  });

  test('a PDF decompression bomb and PNG pixel bombs are refused (ATTACHMENT_BOMB)', async () => {
    const bomb = await fx.deflateBombPdf(128);
    assert.ok(bomb.length < MAX);
    const pdf = assertError(await upload(t, token, fileIds[0], bomb, 'application/pdf', 'bomb.pdf'), 422, 'ATTACHMENT_BOMB');
    assert.match(pdf.error, /expands beyond/);
    // Declares 20000×20000 pixels (1.6 GB as RGBA) in a few hundred bytes.
    const declared = assertError(await upload(t, token, fileIds[0], fx.pngDeclaring(20000, 20000), 'image/png', 'bomb.png'), 422, 'ATTACHMENT_BOMB');
    assert.match(declared.error, /pixels/);
    // Declares 100×100 but its data inflates to 64 MB.
    const inflating = fx.pngDeclaring(100, 100, deflateSync(Buffer.alloc(64 * 1024 * 1024)));
    assert.ok(inflating.length < MAX);
    const data = assertError(await upload(t, token, fileIds[0], inflating, 'image/png', 'inflating.png'), 422, 'ATTACHMENT_BOMB');
    assert.match(data.error, /expands beyond/);
    assert.deepEqual(await attachmentBlobs(t, env), []);
  });

  test('a PDF is taken: stored with its SHA-256 and a sanitised name; the session shows it', async () => {
    const res = await upload(t, token, fileIds[0], pdfBytes, 'application/pdf', '../../etc/Pass\u202eport <scan>.pdf');
    assert.equal(res.statusCode, 200, res.body);
    const a = res.json();
    assert.equal(a.contentType, 'application/pdf');
    assert.equal(a.size, pdfBytes.length);
    assert.equal(a.sha256, sha256(pdfBytes));
    assert.equal(a.name, 'Passport scan.pdf');
    const field = (await session(t, token)).json().fields.find((f: { fieldId: number }) => f.fieldId === fileIds[0]);
    assert.equal(field.attachment.sha256, a.sha256);
    assert.equal((await attachmentBlobs(t, env)).length, 1);
  });

  test('replacing an upload deletes the old blob (a PNG replaces the PDF); a JPEG goes to the other field', async () => {
    const before = await attachmentBlobs(t, env);
    const png = fx.signaturePng();
    const res = await upload(t, token, fileIds[0], png, 'image/png', 'photo.png');
    assert.equal(res.statusCode, 200, res.body);
    assert.equal(res.json().sha256, sha256(png));
    const after = await attachmentBlobs(t, env);
    assert.equal(after.length, 1);
    assert.notEqual(after[0], before[0], 'the old blob is gone');
    assert.equal(await t.container.storage.get(before[0]), undefined);
    // A generic type is taken from the name's extension; the bytes must still match.
    const jpeg = await upload(t, token, fileIds[1], fx.SMALL_JPEG, 'application/octet-stream', 'receipt.jpeg');
    assert.equal(jpeg.statusCode, 200, jpeg.body);
    assert.equal(jpeg.json().contentType, 'image/jpeg');
    assert.equal(jpeg.json().name, 'receipt.jpg');
    // The PDF goes back on the first field (listed below, and stamped and certified).
    assert.equal((await upload(t, token, fileIds[0], pdfBytes, 'application/pdf', 'Passport.pdf')).statusCode, 200);
    assert.equal((await attachmentBlobs(t, env)).length, 2);
  });

  test('completion is allowed once attached; the sender lists and downloads them with their hashes; the certificate lists each', async () => {
    const done = await completeOnly(t, token, { fields: [], signature: { kind: 'drawn', image: PNG_DATA_URL } });
    assert.equal(done.statusCode, 200, done.body);
    // The one signer acted (the envelope completed with it): nothing more can be attached.
    assertError(await upload(t, token, fileIds[0], pdfBytes, 'application/pdf', 'late.pdf'), 409, 'ALREADY_ACTED');
    await drain(t);

    const list = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/attachments`, headers: bearer(t.customer.apiKey) });
    assert.equal(list.statusCode, 200, list.body);
    const items = list.json().attachments as { id: string; fieldId: number; name: string; sha256: string; recipientEmail: string; contentType: string; size: number }[];
    assert.deepEqual(items.map((a) => [a.fieldId, a.name, a.contentType]).sort(), [[fileIds[0], 'Passport.pdf', 'application/pdf'], [fileIds[1], 'receipt.jpg', 'image/jpeg']].sort());
    assert.ok(items.every((a) => a.recipientEmail === signer.email));

    const pdfItem = items.find((a) => a.name === 'Passport.pdf')!;
    const dl = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/attachments/${pdfItem.id}`, headers: bearer(t.customer.apiKey) });
    assert.equal(dl.statusCode, 200);
    assert.equal(dl.headers['content-type'], 'application/pdf');
    assert.match(String(dl.headers['content-disposition']), /^attachment; filename="Passport.pdf"/);
    assert.equal(dl.headers['x-content-type-options'], 'nosniff');
    assert.equal(sha256(dl.rawPayload), pdfItem.sha256);

    const sealed = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(sealed.statusCode, 200);
    const doc = await PDF.load(new Uint8Array(sealed.rawPayload));
    const text = doc.getPages().map((p) => p.extractText().text).join('\n');
    assert.match(text, /Attachments \(2\)/);
    for (const a of items) assert.ok(text.includes(a.sha256), `certificate lists ${a.name}'s SHA-256`);
    assert.match(text, /Attached: Passport\.pdf/, 'the field box carries a note');

    // The completion email carries both files (within SIGNER_ATTACHMENTS_EMAIL_MAX_BYTES).
    const outbox = path.join(t.config.dataDir, 'outbox');
    const mails = readdirSync(outbox).map((f) => readFileSync(path.join(outbox, f), 'utf8'));
    const completed = mails.find((m) => /^Subject: Completed/m.test(m) && m.includes(signer.email));
    assert.ok(completed, 'a completion email');
    assert.match(completed, /filename="?Passport\.pdf/);
    assert.match(completed, /filename="?receipt\.jpg/);
  });

  test("another customer's key: 404 on the list and the download; an unknown attachment is 404", async () => {
    const other = await t.createCustomer();
    assertError(await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/attachments`, headers: bearer(other.apiKey) }), 404, 'ENVELOPE_NOT_FOUND');
    const [a] = (await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/attachments`, headers: bearer(t.customer.apiKey) })).json().attachments;
    assertError(await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/attachments/${a.id}`, headers: bearer(other.apiKey) }), 404, 'ENVELOPE_NOT_FOUND');
    assertError(await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/attachments/00000000-0000-4000-8000-000000000000`, headers: bearer(t.customer.apiKey) }), 404, 'ATTACHMENT_NOT_FOUND');
  });

  test('retention purge deletes the attachment blobs', async () => {
    assert.equal((await attachmentBlobs(t, env)).length, 2);
    await t.container.db.transaction((tx) => t.container.local.engine.purge(tx, env.engineEnvelopeId));
    await drain(t);
    assert.deepEqual(await attachmentBlobs(t, env), []);
  });
});

describe('the documenso engine refuses FILE fields', () => {
  test('a create with a FILE field is 400 NOT_SUPPORTED_BY_ENGINE, before anything reaches Documenso', async () => {
    const { startDocumensoStandin } = await import('./fixtures/documenso-standin.js');
    const standin = await startDocumensoStandin();
    const t = await createTestApp({ env: { SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: standin.url, DOCUMENSO_API_KEY: standin.apiKey, DOCUMENSO_WEBHOOK_SECRET: 'documenso-webhook-secret-for-tests' } });
    try {
      const signer = person('doc-file');
      const body = envelopeBody([await samplePdf()], { title: 'No files', recipients: [signer], fields: [sigField(signer.email), fileField(signer.email)] });
      const res = await postMultipart(t, body);
      const refused = assertError(res, 400, 'NOT_SUPPORTED_BY_ENGINE');
      assert.match(refused.error, /FILE fields/);
    } finally {
      await t.close();
      await standin.close();
    }
  });
});
