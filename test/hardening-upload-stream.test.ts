/**
 * Uploads are streamed to DATA_DIR/tmp/uploads (one directory per request) while they are hashed and
 * counted, parsed from there in the sandbox, and stored from there: nothing of them stays on disk once
 * the request is over, whether it succeeded, hit a limit, or the client went away.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';
import { PDF, PdfName } from '@libpdf/core';
import { createLocalStorage } from '../src/providers/storage/index.js';
import { createTestApp, type TestApp } from './harness.js';
import { assertError, makePdf, multipart, newKey, person, postMultipart, sigField } from './fixtures/envelopes.js';

const MAX_PDF_BYTES = 200_000;
const HOUR = 60 * 60 * 1000;

/** Everything under the upload directory (files and request directories) but the planted 'in-flight' one. */
const uploadsOf = (t: TestApp) => {
  const root = path.join(t.config.dataDir, 'tmp', 'uploads');
  return existsSync(root) ? readdirSync(root, { recursive: true }).map(String).filter((f) => !f.startsWith('in-flight')) : [];
};

/** Waits for a condition the server reaches asynchronously (the removal runs once the response is closed). */
async function eventually(what: string, check: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !check(); i++) await sleep(20);
  assert.ok(check(), what);
}

/** A one-page PDF whose content stream inflates to `mb` MiB of spaces. */
async function flateBomb(mb: number): Promise<Uint8Array> {
  const pdf = PDF.create();
  const page = pdf.addPage({ size: 'letter' });
  page.dict.set('Contents', pdf.createStream({ Filter: PdfName.of('FlateDecode') }, deflateSync(Buffer.alloc(mb * 1024 * 1024, 0x20), { level: 9 })));
  return pdf.save({ compressStreams: false });
}

/** Opens a chunked create on a raw socket and sends the head of a multipart body with one pdf part. */
async function openUpload(t: TestApp, boundary: string): Promise<{ socket: Socket; answer: () => string; send: (bytes: Buffer) => void }> {
  const port = (t.app.server.address() as AddressInfo).port;
  const socket = connect(port, '127.0.0.1');
  await new Promise<void>((r) => socket.once('connect', () => r()));
  socket.on('error', () => {});
  let answer = '';
  socket.on('data', (d) => (answer += d.toString()));
  const send = (bytes: Buffer) => socket.write(`${bytes.length.toString(16)}\r\n${bytes.toString('latin1')}\r\n`, 'latin1');
  socket.write(
    `POST /v1/envelopes HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${t.customer.apiKey}\r\nIdempotency-Key: ${newKey()}\r\n` +
      `Content-Type: multipart/form-data; boundary=${boundary}\r\nTransfer-Encoding: chunked\r\n\r\n`,
  );
  send(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="pdf"; filename="big.pdf"\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.7\n`));
  return { socket, answer: () => answer, send };
}

describe('streamed uploads', () => {
  let t: TestApp;
  let leftover: string;
  let recent: string;
  before(async () => {
    t = await createTestApp({
      env: { MAX_PDF_BYTES: String(MAX_PDF_BYTES), PDF_PARSE_MAX_MEMORY_MB: '64' },
      // What a crash left behind: an upload directory last written two hours ago, and one of a request in flight.
      beforeReady: async (_app, c) => {
        const root = path.join(c.config.dataDir, 'tmp', 'uploads');
        leftover = path.join(root, 'crashed');
        recent = path.join(root, 'in-flight');
        for (const dir of [leftover, recent]) {
          mkdirSync(dir, { recursive: true });
          writeFileSync(path.join(dir, 'part-1'), '%PDF-1.7 partial');
        }
        const old = new Date(Date.now() - 2 * HOUR);
        utimesSync(leftover, old, old);
      },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => t.close());

  test('leftovers of a crash are swept at start; a directory written recently is left alone', () => {
    assert.equal(existsSync(leftover), false);
    assert.equal(existsSync(recent), true);
  });

  test('an oversize file part is refused 413 as it arrives, before the body ends, and leaves no file', async (ctx) => {
    const upload = await openUpload(t, '----stream-limit');
    ctx.after(() => upload.socket.destroy());
    // Under the body limit (MAX_PDF_BYTES plus 1 MiB for the rest), over the file limit: never ended.
    for (let i = 0; i < 5; i++) upload.send(Buffer.alloc(64 * 1024, 0x20));
    await eventually('an answer while the body is still open', () => /"code":/.test(upload.answer()));
    assert.match(upload.answer(), /^HTTP\/1\.1 413/);
    assert.match(upload.answer(), /"code":"PDF_TOO_LARGE"/);
    // Removed before the answer was sent.
    assert.deepEqual(uploadsOf(t), []);
  });

  test('a client that goes away mid-upload leaves no file', async () => {
    const upload = await openUpload(t, '----stream-abort');
    upload.send(Buffer.alloc(50_000, 0x20));
    await eventually('the part is being streamed to a file', () => uploadsOf(t).some((f) => /part-\d+$/.test(f)));
    upload.socket.destroy();
    await eventually('the upload directory is removed', () => uploadsOf(t).length === 0);
  });

  test('a hostile PDF is still refused INVALID_PDF by the sandbox, and leaves no file', async () => {
    const s = person('bomb');
    const res = await postMultipart(t, multipart([{ name: 'pdf', value: await flateBomb(48) }, { name: 'payload', value: JSON.stringify({ recipients: [s], fields: [sigField(s.email)] }) }]));
    assertError(res, 400, 'INVALID_PDF');
    assert.match(res.json().error, /expands beyond the 64 MB limit/);
    await eventually('the upload directory is removed', () => uploadsOf(t).length === 0);
  });

  test('several parts are joined in order into the stored original; one clean part is stored byte for byte', async () => {
    const s = person('join');
    const payload = JSON.stringify({ recipients: [s], fields: [sigField(s.email, { page: 3 })] });
    const [one, two] = [await makePdf(1), await makePdf(2)];
    const joined = await postMultipart(t, multipart([{ name: 'pdf', value: one }, { name: 'pdf', value: two }, { name: 'payload', value: payload }]));
    assert.equal(joined.statusCode, 201, joined.body);
    const stored = await t.container.storage.get(`documents/${joined.json().engineEnvelopeId}/original.pdf`);
    assert.ok(stored);
    assert.equal((await PDF.load(stored)).getPageCount(), 3);

    const single = await postMultipart(t, multipart([{ name: 'pdf', value: two }, { name: 'payload', value: JSON.stringify({ recipients: [s], fields: [sigField(s.email)] }) }]));
    assert.equal(single.statusCode, 201, single.body);
    const original = await t.container.storage.get(`documents/${single.json().engineEnvelopeId}/original.pdf`);
    assert.deepEqual(Buffer.from(original!), Buffer.from(two));
    assert.equal(createHash('sha256').update(original!).digest('hex'), createHash('sha256').update(two).digest('hex'));
    await eventually('the upload directories (parts and the joined document) are removed', () => uploadsOf(t).length === 0);
  });

  test('the fingerprint covers the streamed parts: a replay with a new boundary is recognised, another PDF under the key is not', async () => {
    const c = await t.createCustomer(500);
    const s = person('replay');
    // The payload as a file part, as `curl -F payload=@payload.json` sends it.
    const payload = { name: 'payload', value: Buffer.from(JSON.stringify({ recipients: [s], fields: [sigField(s.email)] })), filename: 'payload.json', contentType: 'application/json' };
    const pdf = await makePdf(1);
    const key = newKey();
    const first = await postMultipart(t, multipart([{ name: 'pdf', value: pdf }, payload], '----replay-one'), { apiKey: c.apiKey, key });
    assert.equal(first.statusCode, 201, first.body);
    const replay = await postMultipart(t, multipart([{ name: 'pdf', value: pdf }, payload], '----replay-two'), { apiKey: c.apiKey, key });
    assert.equal(replay.statusCode, 201, replay.body);
    assert.equal(replay.json().envelopeId, first.json().envelopeId);
    const other = await postMultipart(t, multipart([{ name: 'pdf', value: await makePdf(2) }, payload], '----replay-three'), { apiKey: c.apiKey, key });
    assertError(other, 422, 'IDEMPOTENCY_KEY_REUSED');
  });
});

describe('BlobStorage.putFile (local)', () => {
  test('stores a copy of the file as put does (0600, the source left as it was), and a missing source leaves nothing', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'signet-putfile-'));
    const storage = createLocalStorage(path.join(dir, 'blobs'));
    const source = path.join(dir, 'upload');
    writeFileSync(source, '%PDF-1.7 streamed', { mode: 0o644 });
    await storage.putFile('documents/a/original.pdf', source);
    assert.equal(Buffer.from((await storage.get('documents/a/original.pdf'))!).toString(), '%PDF-1.7 streamed');
    assert.equal(statSync(path.join(dir, 'blobs', 'documents', 'a', 'original.pdf')).mode & 0o777, 0o600);
    assert.equal(readFileSync(source, 'utf8'), '%PDF-1.7 streamed');
    await assert.rejects(storage.putFile('documents/b/original.pdf', path.join(dir, 'missing')), /ENOENT/);
    assert.deepEqual(readdirSync(path.join(dir, 'blobs', 'documents', 'b')), []);
  });
});
