/**
 * POST /v1/documents/verify and GET /verify-document: a PDF sealed through the real flow is
 * recognised; a copy with content appended after sealing, or with a byte changed, is not taken for
 * it; a foreign or unrelated PDF is not ours; nothing of an upload is stored.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { after, before, describe, test } from 'node:test';
import { PDF } from '@libpdf/core';
import { sql } from 'drizzle-orm';
import type { LightMyRequestResponse } from 'fastify';
import { rowsOf } from '../src/db/client.js';
import { childrenOf, readDer } from '../src/pdf/der.js';
import { findSignedRanges, signatureContents } from '../src/pdf/signed-revisions.js';
import { loadSigner } from '../src/providers/certs/signer.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError, createEnvelope, drain, getEnvelope, multipart, person, recipientToken, signAs } from './fixtures/envelopes.js';
import { derHeavyPdf, notPdf, plainPdf, signedPdf, which } from './fixtures/pdfs.js';

const MAX_PDF_BYTES = 2_000_000;

let t: TestApp;
let sealed: Buffer;
let envelope: Awaited<ReturnType<typeof getEnvelope>>;

before(async () => {
  t = await createTestApp({ env: { MAX_PDF_BYTES: String(MAX_PDF_BYTES) } });
  const [a, b] = [person('vd-a', 'SIGNER', { name: 'Łukasz Nowak' }), person('vd-b', 'APPROVER', { name: 'Ελένη Παππά' })];
  const env = await createEnvelope(t, { title: 'Supply agreement 2026', recipients: [a, b, person('vd-cc', 'CC')], fields: [{ type: 'SIGNATURE', recipientEmail: a.email, page: 1, positionXPercent: 10, positionYPercent: 70, widthPercent: 25, heightPercent: 6 }] });
  await drain(t);
  // An APPROVER acts before the signers.
  await signAs(t, recipientToken(env, b.email));
  await signAs(t, recipientToken(env, a.email));
  await drain(t);
  envelope = await getEnvelope(t, env.envelopeId);
  assert.equal(envelope.status, 'COMPLETED');
  const dl = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
  assert.equal(dl.statusCode, 200, dl.body);
  sealed = dl.rawPayload;
});
after(async () => {
  await t?.close();
});

const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** Posts a file as a browser form does (multipart, part `file`), with no credential. */
function postFile(app: TestApp, bytes: Uint8Array, headers: Record<string, string> = {}): Promise<LightMyRequestResponse> {
  const mp = multipart([{ name: 'file', value: bytes, filename: 'document.pdf' }]);
  return app.app.inject({ method: 'POST', url: '/v1/documents/verify', headers: { 'content-type': mp.contentType, ...headers }, payload: mp.body });
}

/** Posts a file as the raw body (Content-Type: application/pdf), with no credential. */
const postRaw = (app: TestApp, bytes: Uint8Array) => app.app.inject({ method: 'POST', url: '/v1/documents/verify', headers: { 'content-type': 'application/pdf' }, payload: Buffer.from(bytes) });

function verdictOf(res: LightMyRequestResponse) {
  assert.equal(res.statusCode, 200, res.body);
  assert.equal(res.headers['cache-control'], 'no-store');
  return res.json();
}

/** Every table's row count and every stored blob: what "nothing is stored" is checked against. */
async function footprint(app: TestApp): Promise<{ rows: Record<string, number>; blobs: string[] }> {
  const tables = rowsOf<{ table_name: string }>(await app.container.db.execute(sql`SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' ORDER BY table_name`));
  const rows: Record<string, number> = {};
  for (const { table_name } of tables) {
    const [row] = rowsOf<{ n: number | string }>(await app.container.db.execute(sql.raw(`SELECT count(*) AS n FROM "${table_name}"`)));
    rows[table_name] = Number(row.n);
  }
  const walk = (dir: string): string[] => {
    try {
      return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(dir, e.name)) : [path.join(dir, e.name)]));
    } catch {
      return [];
    }
  };
  return { rows, blobs: walk(path.join(app.config.dataDir, 'blobs')).sort() };
}

describe('a sealed PDF', () => {
  test('is recognised, anonymously, as a form upload and as a raw body: title, completion time, signers', async () => {
    for (const res of [await postFile(t, sealed), await postRaw(t, sealed)]) {
      const v = verdictOf(res);
      assert.equal(v.status, 'SEALED', v.summary);
      assert.equal(v.sealedByThisServer, true);
      assert.equal(v.unchanged, true);
      assert.equal(v.sha256, sha256(sealed));
      assert.equal(v.envelope.envelopeId, envelope.envelopeId);
      assert.equal(v.envelope.title, 'Supply agreement 2026');
      assert.equal(v.envelope.completedAt, envelope.completedAt);
      assert.equal(v.envelope.testMode, false);
      // Signers and approvers in recipient order, with when they acted; the CC signed nothing.
      const byEmail = new Map(envelope.recipients.map((r) => [r.name, r.signedAt]));
      assert.deepEqual(v.envelope.signers, [
        { name: 'Łukasz Nowak', role: 'SIGNER', signedAt: byEmail.get('Łukasz Nowak') },
        { name: 'Ελένη Παππά', role: 'APPROVER', signedAt: byEmail.get('Ελένη Παππά') },
      ]);
      assert.ok(v.envelope.signers.every((s: { signedAt: string | null }) => s.signedAt));
      // The PAdES signature verified against the sealing certificate, over the whole file.
      assert.equal(v.signature.intact, true);
      assert.equal(v.signature.coversWholeFile, true);
      assert.ok(Math.abs(Date.parse(v.signature.signedAt) - Date.parse(v.envelope.completedAt)) < 60_000, v.signature.signedAt);
    }
  });

  test('prints on its certificate page where it can be verified', { skip: which('pdftotext') ? false : 'pdftotext is not installed' }, () => {
    const text = execFileSync('pdftotext', ['-', '-'], { input: sealed, encoding: 'utf8' });
    assert.match(text.replace(/\s+/g, ' '), /http:\/\/signet\.test\/verify-document/);
  });

  test('with content added after sealing (an incremental update) is MODIFIED, naming its envelope', async () => {
    const pdf = await PDF.load(sealed);
    pdf.addPage({ size: 'letter' }).drawText('Added after sealing', { x: 72, y: 700, size: 12 });
    const changed = await pdf.save({ incremental: true });
    assert.deepEqual(Buffer.from(changed.subarray(0, sealed.length)), sealed, 'the sealed file is a prefix of the changed one');

    const v = verdictOf(await postFile(t, changed));
    assert.equal(v.status, 'MODIFIED', v.summary);
    assert.equal(v.sealedByThisServer, true);
    assert.equal(v.unchanged, false);
    assert.match(v.summary, /content was added after sealing/);
    assert.equal(v.envelope.title, 'Supply agreement 2026');
    assert.equal(v.signature.intact, true);
    assert.equal(v.signature.coversWholeFile, false);

    // Plain bytes appended count the same.
    const appended = verdictOf(await postRaw(t, Buffer.concat([sealed, Buffer.from('\n% appended\n')])));
    assert.equal(appended.status, 'MODIFIED');
    assert.equal(appended.envelope.envelopeId, envelope.envelopeId);
  });

  test('with one byte changed is never taken for the sealed file, and names no envelope', async () => {
    const [range] = findSignedRanges(sealed);
    // In the middle of the file (wherever that falls), and in the middle of the signed content.
    for (const at of [Math.floor(sealed.length / 2), Math.floor(range.contentsStart / 2)]) {
      const flipped = Buffer.from(sealed);
      flipped[at] ^= 0x01;
      const v = verdictOf(await postFile(t, flipped));
      assert.notEqual(v.status, 'SEALED', `byte ${at}: ${v.summary}`);
      assert.equal(v.unchanged, false);
      assert.equal(v.envelope, null);
    }
    // A change inside what the signature covers: our signature, no longer matching.
    const content = Buffer.from(sealed);
    content[Math.floor(range.contentsStart / 2)] ^= 0x01;
    const v = verdictOf(await postFile(t, content));
    assert.equal(v.status, 'MODIFIED', v.summary);
    assert.equal(v.signature.intact, false);
    assert.match(v.summary, /altered/);
  });
});

/** `file` with one byte changed inside the certificates its seal's CMS embeds: bytes the signature does not cover. */
function withCertificateByteChanged(file: Buffer): Buffer {
  const [range] = findSignedRanges(file);
  const der = signatureContents(file, range)!;
  const [, wrapped] = childrenOf(der, readDer(der, 0), 2)!;
  const [signedData] = childrenOf(der, wrapped, 1)!;
  const certificates = childrenOf(der, signedData, 6)!.find((d) => d.tag === 0xa0)!;
  // Inside the last certificate's own signature: the DER around it stays well formed.
  const at = range.contentsStart + 1 + 2 * (certificates.end - 5);
  const changed = Buffer.from(file);
  changed[at] = changed[at] === 0x30 ? 0x31 : 0x30;
  return changed;
}

describe("a seal whose CMS changed where the signature does not cover it", () => {
  let sealedTest: Buffer;
  let testEnvelopeId: string;
  before(async () => {
    const a = person('vd-test');
    const env = await createEnvelope(t, { title: 'Test-mode seal', recipients: [a] }, { apiKey: t.customer.testApiKey });
    await drain(t);
    await signAs(t, recipientToken(env, a.email));
    await drain(t);
    const dl = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.testApiKey) });
    assert.equal(dl.statusCode, 200, dl.body);
    [sealedTest, testEnvelopeId] = [dl.rawPayload, env.envelopeId];
  });

  test('is SEALED naming its envelope, test mode included; with content appended, MODIFIED naming it', async () => {
    assert.equal(verdictOf(await postFile(t, sealedTest)).envelope.testMode, true);
    const changed = withCertificateByteChanged(sealedTest);
    assert.notEqual(sha256(changed), sha256(sealedTest));
    const v = verdictOf(await postFile(t, changed));
    assert.equal(v.status, 'SEALED', v.summary);
    assert.equal(v.envelope?.envelopeId, testEnvelopeId);
    assert.equal(v.envelope.testMode, true);
    assert.deepEqual([v.signature.intact, v.signature.coversWholeFile], [true, true]);
    assert.match(v.summary, /bytes it does not cover differ/);

    const appended = verdictOf(await postRaw(t, Buffer.concat([changed, Buffer.from('\n% appended\n')])));
    assert.equal(appended.status, 'MODIFIED', appended.summary);
    assert.equal(appended.envelope?.envelopeId, testEnvelopeId);
  });

  test("a file signed with the sealing certificate that matches no seal is not SEALED, and names no envelope", async () => {
    const { signer } = await loadSigner({ dataDir: t.config.dataDir });
    const pdf = await PDF.load(await plainPdf(1, 'Never sealed here'));
    const { bytes } = await pdf.sign({ signer, reason: 'Signed electronically', subFilter: 'ETSI.CAdES.detached' });
    const v = verdictOf(await postFile(t, bytes));
    assert.equal(v.status, 'MODIFIED', v.summary);
    assert.equal(v.sealedByThisServer, true);
    assert.equal(v.envelope, null);
    assert.deepEqual([v.signature.intact, v.signature.coversWholeFile], [true, true]);
  });
});

describe('other files', () => {
  test('an unrelated PDF, and one signed with another certificate, are NOT_SEALED', async () => {
    for (const bytes of [await plainPdf(1, 'Nothing to see'), await signedPdf()]) {
      const v = verdictOf(await postFile(t, bytes));
      assert.equal(v.status, 'NOT_SEALED', v.summary);
      assert.equal(v.sealedByThisServer, false);
      assert.equal(v.envelope, null);
      assert.equal(v.signature, null);
      assert.equal(v.sha256, sha256(bytes));
    }
  });

  test('not a PDF is 400 INVALID_PDF; no file is 400 MISSING_FILE; JSON is 415', async () => {
    assertError(await postFile(t, notPdf()), 400, 'INVALID_PDF');
    assertError(await postRaw(t, notPdf()), 400, 'INVALID_PDF');
    assertError(await postRaw(t, new Uint8Array()), 400, 'MISSING_FILE');
    const other = multipart([{ name: 'payload', value: '{}' }]);
    assertError(await t.app.inject({ method: 'POST', url: '/v1/documents/verify', headers: { 'content-type': other.contentType }, payload: other.body }), 400, 'MISSING_FILE');
    const two = multipart([{ name: 'file', value: sealed }, { name: 'file', value: sealed }]);
    assertError(await t.app.inject({ method: 'POST', url: '/v1/documents/verify', headers: { 'content-type': two.contentType }, payload: two.body }), 400, 'VALIDATION_ERROR');
    assertError(await t.app.inject({ method: 'POST', url: '/v1/documents/verify', headers: { 'content-type': 'application/json' }, payload: '{"file": "x"}' }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  });

  test('over MAX_PDF_BYTES is 413 PDF_TOO_LARGE, as a form upload and as a raw body', async () => {
    const big = Buffer.concat([Buffer.from('%PDF-1.7\n'), Buffer.alloc(MAX_PDF_BYTES)]);
    const form = assertError(await postFile(t, big), 413, 'PDF_TOO_LARGE');
    assert.equal(form.maxBytes, MAX_PDF_BYTES);
    assertError(await postRaw(t, big), 413, 'PDF_TOO_LARGE');
  });
});

test('nothing of an upload is stored: no row, no blob', async () => {
  const before = await footprint(t);
  const pdf = await PDF.load(sealed);
  pdf.addPage({ size: 'letter' });
  for (const bytes of [sealed, await pdf.save({ incremental: true }), await plainPdf(1, 'Unrelated')]) {
    verdictOf(await postFile(t, bytes));
    verdictOf(await postFile(t, bytes, { ...bearer(t.customer.apiKey), 'idempotency-key': `vd-${bytes.length}` }));
  }
  assertError(await postFile(t, notPdf()), 400, 'INVALID_PDF');
  assert.deepEqual(await footprint(t), before);
});

describe('the cost of a signature', () => {
  test("files full of DER cost the request's thread about what files of the same size without signatures cost", async (tc) => {
    // 28 calls: one IP's anonymous allowance at the default limit. Each file carries 8 signatures
    // of 256 KB of DER elements (4 MB); the control, the same bytes with no /ByteRange. Compared
    // with the control, not with a time, and in CPU of the thread that answers requests (not in
    // wall time, which a loaded CI machine stretches): what the signatures add, whatever runs beside.
    const app = await createTestApp({ env: { VERIFY_DOCUMENT_RATE_LIMIT: '1000', RATE_LIMIT_MAX: '100000' } });
    try {
      /** CPU milliseconds of this thread (the server's) while 28 verifications of `bytes` ran. */
      const threadMs = async (bytes: Uint8Array) => {
        const start = process.threadCpuUsage();
        const results = await Promise.all(Array.from({ length: 28 }, () => postRaw(app, bytes)));
        const used = process.threadCpuUsage(start);
        for (const res of results) assert.equal(verdictOf(res).status, 'NOT_SEALED');
        return (used.user + used.system) / 1000;
      };
      const control = await threadMs(derHeavyPdf(8, true));
      const heavy = await threadMs(derHeavyPdf(8));
      tc.diagnostic(`the request thread's CPU: ${Math.round(heavy)} ms with the signatures, ${Math.round(control)} ms without`);
      // A signature parsed as DER costs seconds here, which this catches; the bound leaves room for noise.
      assert.ok(heavy < control * 2 + 1000, `${Math.round(heavy)} ms of CPU with the signatures (without: ${Math.round(control)} ms)`);
    } finally {
      await app.close();
    }
  });
});

describe('who may call', () => {
  test('an API key is accepted and a bad one refused; anonymous callers are limited per IP', async () => {
    const limited = await createTestApp({ env: { VERIFY_DOCUMENT_RATE_LIMIT: '2' } });
    try {
      const pdf = await plainPdf(1);
      verdictOf(await postFile(limited, pdf));
      verdictOf(await postFile(limited, pdf));
      const refused = assertError(await postFile(limited, pdf), 429, 'RATE_LIMITED');
      assert.ok(refused.retryAfterSeconds > 0);
      // A customer counts against its own budget, not the anonymous one.
      verdictOf(await postFile(limited, pdf, bearer(limited.customer.apiKey)));
      assertError(await postFile(limited, pdf, bearer('svc_live_00000000000000000000000000000000')), 401, 'UNAUTHORIZED');
    } finally {
      await limited.close();
    }
  });

  test('the OpenAPI documents both body forms, the optional credential and the error codes', async () => {
    const doc = (await t.app.inject({ url: '/openapi.json' })).json();
    const op = doc.paths['/v1/documents/verify'].post;
    assert.equal(op.operationId, 'verifyDocument');
    assert.deepEqual(Object.keys(op.requestBody.content).sort(), ['application/pdf', 'multipart/form-data']);
    assert.deepEqual(op.security[0], {});
    for (const status of ['200', '400', '401', '413', '415', '429']) assert.ok(op.responses[status], `response ${status}`);
    assert.match(JSON.stringify(op.responses['400']), /INVALID_PDF/);
    const llms = (await t.app.inject({ url: '/llms.txt' })).body;
    assert.match(llms, /^- POST \/v1\/documents\/verify: .*\(auth optional\)$/m);
  });
});

describe('the page', () => {
  test('GET /verify-document is served with a strict CSP and its own assets', async () => {
    const res = await t.app.inject({ url: '/verify-document' });
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/html/);
    const csp = String(res.headers['content-security-policy']);
    assert.match(csp, /default-src 'none'/);
    assert.match(csp, /script-src 'self'/);
    assert.match(csp, /frame-ancestors 'none'/);
    assert.doesNotMatch(res.body, /<script>|style=/, 'no inline script or style');
    assert.match(res.body, /data-verify-url="v1\/documents\/verify"/);
    for (const [, asset] of res.body.matchAll(/(?:href|src)="(verify-document\/assets\/[^"]+)"/g)) {
      const a = await t.app.inject({ url: `/${asset}` });
      assert.equal(a.statusCode, 200, asset);
      assert.match(String(a.headers['cache-control']), /immutable/);
    }
    assert.equal((await t.app.inject({ url: '/verify-document/assets/app-000000000000/verify-document.js' })).statusCode, 404);
  });
});
