/**
 * Uploads are streamed to files of DATA_DIR/tmp/uploads (`<uuid>-<n>`, no directory per request) while
 * they are hashed and counted, parsed from there in the sandbox, and the original is moved from there
 * into the blob store: nothing of them stays on disk once the request is over, whether it succeeded,
 * hit a limit, or the client went away.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';
import { PDF, PdfName } from '@libpdf/core';
import { prepareDocument } from '../src/pdf/prepare.js';
import { createLocalStorage, type PutFileOptions } from '../src/providers/storage/index.js';
import { createTestApp, type TestApp } from './harness.js';
import { assertError, makePdf, multipart, newKey, person, postMultipart, sigField } from './fixtures/envelopes.js';
import * as fx from './fixtures/pdfs.js';

const MAX_PDF_BYTES = 200_000;
const HOUR = 60 * 60 * 1000;

const uploadRoot = (t: TestApp) => path.join(t.config.dataDir, 'tmp', 'uploads');
/** Everything under the upload directory (files, and directories if any) but the planted 'in-flight' file. */
const uploadsOf = (t: TestApp) => {
  const root = uploadRoot(t);
  return existsSync(root) ? readdirSync(root, { recursive: true }).map(String).filter((f) => !f.startsWith('in-flight')) : [];
};
/** An upload file of a request: `<uuid>-<n>`, right in the upload directory. */
const UPLOAD_FILE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-\d+$/;

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
  let blobRoot: string;
  let leftovers: string[];
  let recent: string;
  /** What the engine handed to putFile, and what became of the file. */
  const puts: { key: string; file: string; opts?: PutFileOptions; inode: number; leftBehind: boolean }[] = [];
  before(async () => {
    blobRoot = mkdtempSync(path.join(tmpdir(), 'signet-upload-blobs-'));
    const blobs = createLocalStorage(blobRoot);
    const storage = {
      ...blobs,
      async putFile(key: string, file: string, opts?: PutFileOptions) {
        const inode = statSync(file).ino;
        await blobs.putFile(key, file, opts);
        puts.push({ key, file, opts, inode, leftBehind: existsSync(file) });
      },
    };
    t = await createTestApp({
      env: { MAX_PDF_BYTES: String(MAX_PDF_BYTES), PDF_PARSE_MAX_MEMORY_MB: '64' },
      overrides: { storage },
      // What a crash left behind, two hours ago: an upload file, and a request directory of an earlier
      // version; and the file of a request in flight.
      beforeReady: async (_app, c) => {
        const root = path.join(c.config.dataDir, 'tmp', 'uploads');
        const legacy = path.join(root, 'f0e1d2c3-b4a5-4697-8899-aabbccddeeff');
        leftovers = [path.join(root, '0a1b2c3d-4e5f-4a6b-8c7d-8e9f0a1b2c3d-1'), legacy];
        recent = path.join(root, 'in-flight-1');
        mkdirSync(legacy, { recursive: true });
        writeFileSync(path.join(legacy, 'part-1'), '%PDF-1.7 partial');
        for (const file of [leftovers[0], recent]) writeFileSync(file, '%PDF-1.7 partial');
        const old = new Date(Date.now() - 2 * HOUR);
        for (const leftover of leftovers) utimesSync(leftover, old, old);
      },
    });
    await t.app.listen({ port: 0, host: '127.0.0.1' });
  });
  after(async () => {
    await t.close();
    rmSync(blobRoot, { recursive: true, force: true });
  });

  test('leftovers of a crash (files, and directories of earlier versions) are swept at start; a file written recently is left alone', () => {
    for (const leftover of leftovers) assert.equal(existsSync(leftover), false, leftover);
    assert.equal(existsSync(recent), true);
  });

  test('the upload directory is made at start, once: the parts are files right in it, no directory per request', async (ctx) => {
    rmSync(recent);
    ctx.after(() => writeFileSync(recent, '%PDF-1.7 partial'));
    const root = uploadRoot(t);
    assert.deepEqual(readdirSync(root), []);
    const upload = await openUpload(t, '----stream-flat');
    ctx.after(() => upload.socket.destroy());
    upload.send(Buffer.alloc(10_000, 0x20));
    await eventually('the part is being streamed to a file', () => readdirSync(root).length > 0);
    const [entry, ...more] = readdirSync(root, { withFileTypes: true });
    assert.deepEqual(more, []);
    assert.match(entry.name, UPLOAD_FILE);
    assert.ok(entry.isFile(), 'a file, not a directory');
    assert.equal(statSync(path.join(root, entry.name)).mode & 0o777, 0o600);
    upload.socket.destroy();
    await eventually('the upload file is removed', () => readdirSync(root).length === 0);
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
    await eventually('the part is being streamed to a file', () => uploadsOf(t).some((f) => UPLOAD_FILE.test(f)));
    upload.socket.destroy();
    await eventually('the upload file is removed', () => uploadsOf(t).length === 0);
  });

  test('a hostile PDF is still refused INVALID_PDF by the sandbox, and leaves no file', async () => {
    const s = person('bomb');
    const res = await postMultipart(t, multipart([{ name: 'pdf', value: await flateBomb(48) }, { name: 'payload', value: JSON.stringify({ recipients: [s], fields: [sigField(s.email)] }) }]));
    assertError(res, 400, 'INVALID_PDF');
    assert.match(res.json().error, /expands beyond the 64 MB limit/);
    await eventually('the upload file is removed', () => uploadsOf(t).length === 0);
  });

  test('the stored original is the upload itself, moved into the blob store (same inode), not copied', async () => {
    const s = person('move');
    const pdf = await makePdf(1);
    puts.length = 0;
    const res = await postMultipart(t, multipart([{ name: 'pdf', value: pdf }, { name: 'payload', value: JSON.stringify({ recipients: [s], fields: [sigField(s.email)] }) }]));
    assert.equal(res.statusCode, 201, res.body);
    const key = `documents/${res.json().engineEnvelopeId}/original.pdf`;
    assert.equal(puts.length, 1);
    const [put] = puts;
    assert.equal(put.key, key);
    assert.deepEqual(put.opts, { move: true });
    assert.equal(path.dirname(put.file), uploadRoot(t));
    assert.match(path.basename(put.file), UPLOAD_FILE);
    assert.equal(put.leftBehind, false, 'gone from the upload directory once stored');
    const blob = path.join(blobRoot, ...key.split('/'));
    assert.equal(statSync(blob).ino, put.inode, 'the same file, renamed');
    assert.equal(statSync(blob).mode & 0o777, 0o600);
    assert.deepEqual(readFileSync(blob), Buffer.from(pdf));
    await eventually('nothing is left in the upload directory', () => uploadsOf(t).length === 0);
  });

  test('several parts are joined in order into the stored original; one clean part is stored byte for byte', async () => {
    const s = person('join');
    const payload = JSON.stringify({ recipients: [s], fields: [sigField(s.email, { page: 3 })] });
    const [one, two] = [await makePdf(1), await makePdf(2)];
    puts.length = 0;
    const joined = await postMultipart(t, multipart([{ name: 'pdf', value: one }, { name: 'pdf', value: two }, { name: 'payload', value: payload }]));
    assert.equal(joined.statusCode, 201, joined.body);
    const stored = await t.container.storage.get(`documents/${joined.json().engineEnvelopeId}/original.pdf`);
    assert.ok(stored);
    assert.equal((await PDF.load(stored)).getPageCount(), 3);
    // The joined document is written over the first part's file (no file of its own), then moved.
    assert.match(path.basename(puts[0].file), /-1$/);
    await eventually('the second part is removed', () => uploadsOf(t).length === 0);

    const single = await postMultipart(t, multipart([{ name: 'pdf', value: two }, { name: 'payload', value: JSON.stringify({ recipients: [s], fields: [sigField(s.email)] }) }]));
    assert.equal(single.statusCode, 201, single.body);
    const original = await t.container.storage.get(`documents/${single.json().engineEnvelopeId}/original.pdf`);
    assert.deepEqual(Buffer.from(original!), Buffer.from(two));
    assert.equal(createHash('sha256').update(original!).digest('hex'), createHash('sha256').update(two).digest('hex'));
    await eventually('the upload files are removed', () => uploadsOf(t).length === 0);
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

describe('prepareDocument with uploaded files', () => {
  test('answers the first file, rewritten in place when the document is not that file as it is (a repaired upload): no other file is made', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'signet-prepare-'));
    try {
      const upload = path.join(dir, 'upload-1');
      // Losing only the xref and trailer is repairable: the document is written afresh.
      const damaged = fx.truncate(await fx.plainPdf(3), 0.9);
      writeFileSync(upload, damaged, { mode: 0o600 });
      const doc = await prepareDocument([upload], { timeoutMs: 20_000, maxMemoryMb: 128 });
      assert.ok('file' in doc);
      assert.equal(doc.file, upload);
      assert.deepEqual(readdirSync(dir), ['upload-1']);
      const stored = readFileSync(upload);
      assert.equal(stored.length, doc.size);
      assert.equal(createHash('sha256').update(stored).digest('hex'), doc.sha256);
      assert.notDeepEqual(stored, Buffer.from(damaged));
      assert.equal((await PDF.load(stored)).getPageCount(), 3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
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

  test('with move, renames the file into place (the same inode, 0600, its age counted from now, gone from where it was); a missing file leaves nothing', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'signet-putfile-'));
    const storage = createLocalStorage(path.join(dir, 'blobs'));
    const source = path.join(dir, 'upload');
    writeFileSync(source, '%PDF-1.7 streamed', { mode: 0o644 });
    const old = new Date(Date.now() - 2 * HOUR);
    utimesSync(source, old, old);
    const inode = statSync(source).ino;
    await storage.putFile('documents/a/original.pdf', source, { move: true });
    const blob = path.join(dir, 'blobs', 'documents', 'a', 'original.pdf');
    assert.equal(statSync(blob).ino, inode);
    assert.equal(statSync(blob).mode & 0o777, 0o600);
    // What the sweep of unreferenced blobs reads: a moved upload is as young as a copy would be.
    assert.ok(Date.now() - statSync(blob).mtimeMs < 60_000);
    assert.equal(existsSync(source), false);
    assert.equal(Buffer.from((await storage.get('documents/a/original.pdf'))!).toString(), '%PDF-1.7 streamed');
    // Replaces a previous value, as put does.
    writeFileSync(source, '%PDF-1.7 second');
    await storage.putFile('documents/a/original.pdf', source, { move: true });
    assert.equal(readFileSync(blob, 'utf8'), '%PDF-1.7 second');
    assert.deepEqual(readdirSync(path.join(dir, 'blobs', 'documents', 'a')), ['original.pdf']);
    await assert.rejects(storage.putFile('documents/b/original.pdf', path.join(dir, 'missing'), { move: true }), /ENOENT/);
    assert.equal(existsSync(path.join(dir, 'blobs', 'documents', 'b')), false);
    rmSync(dir, { recursive: true, force: true });
  });

  // /dev/shm is a tmpfs on Linux: another file system than the temporary directory, as a store on its own mount would be.
  const otherFs = existsSync('/dev/shm') && statSync('/dev/shm').dev !== statSync(tmpdir()).dev;
  test('with move across file systems, copies the file (0600) and leaves it for its owner', { skip: !otherFs && 'no second file system here' }, async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'signet-putfile-'));
    const blobs = mkdtempSync(path.join('/dev/shm', 'signet-blobs-'));
    try {
      const storage = createLocalStorage(blobs);
      const source = path.join(dir, 'upload');
      writeFileSync(source, '%PDF-1.7 elsewhere', { mode: 0o644 });
      await storage.putFile('documents/a/original.pdf', source, { move: true });
      const blob = path.join(blobs, 'documents', 'a', 'original.pdf');
      assert.equal(readFileSync(blob, 'utf8'), '%PDF-1.7 elsewhere');
      assert.equal(statSync(blob).mode & 0o777, 0o600);
      assert.deepEqual(readdirSync(path.join(blobs, 'documents', 'a')), ['original.pdf'], 'no temporary file left');
      assert.equal(readFileSync(source, 'utf8'), '%PDF-1.7 elsewhere');
    } finally {
      rmSync(dir, { recursive: true, force: true });
      rmSync(blobs, { recursive: true, force: true });
    }
  });
});
