/**
 * What a recipient's document link serves (DESIGN §5 "Recipient signing"): no marker text from the
 * first view on, the values of those who already acted, rendered once per version and then read from
 * storage; the sealed PDF once COMPLETED; 410 after any other end. And the sizes of fields placed by
 * markers (README "Fields placed by markers").
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { measureText } from '@libpdf/core';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { blobSweepJob, engineBlobOwner } from '../src/engine/local/blob-sweep.js';
import { createLocalEngineRepo } from '../src/engine/local/local-engine.repo.js';
import { progressKey } from '../src/engine/local/local-engine.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError, complete, createEnvelope, drain, execSql, inTx, makePdf, person, recipientToken, session, signAs, type Envelope } from './fixtures/envelopes.js';
import * as fx from './fixtures/pdfs.js';

let t: TestApp;
const tmp = mkdtempSync(path.join(tmpdir(), 'signet-recipient-doc-'));
before(async () => {
  t = await createTestApp({ creditCents: 5_000 });
});
after(async () => {
  await t?.close();
  rmSync(tmp, { recursive: true, force: true });
});

const MARKER = /\{\{\s*\w+\s*,\s*r\d+\s*\}\}/;
const served = (token: string) => t.app.inject({ url: `/sign/${token}/document` });
function pdftotext(bytes: Uint8Array): string {
  const file = path.join(tmp, `t-${process.hrtime.bigint()}.pdf`);
  writeFileSync(file, bytes);
  return execFileSync('pdftotext', ['-layout', file, '-'], { encoding: 'utf8' });
}
/** Keeps a served PDF and its first page at 60 dpi, to be looked at (DATA: test-artifacts/). */
function keep(name: string, bytes: Uint8Array): void {
  const dir = path.resolve(import.meta.dirname, '..', 'test-artifacts');
  execFileSync('mkdir', ['-p', dir]);
  writeFileSync(path.join(dir, `${name}.pdf`), bytes);
  execFileSync('pdftoppm', ['-r', '60', '-png', '-f', '1', '-l', '1', '-singlefile', path.join(dir, `${name}.pdf`), path.join(dir, name)]);
}
const engineDoc = async (env: Envelope) =>
  rowsOf<{ original_key: string; signed_key: string | null; status: string }>(await t.container.db.execute(sql`SELECT original_key, signed_key, status FROM engine_documents WHERE id = ${env.engineEnvelopeId}`))[0];

/** Two signers in order on the marker fixture (seven pages, every field type, rotated and cropped pages). */
async function markerEnvelope(tag: string) {
  const s1 = { ...person(`${tag}1`, 'SIGNER', { signingOrder: 1 }), name: 'Ana Pereira' };
  const s2 = { ...person(`${tag}2`, 'SIGNER', { signingOrder: 2 }), name: 'Bo Chen' };
  const env = await createEnvelope(t, { title: 'Marker NDA', recipients: [s1, s2], fields: [] }, { pdfs: [(await fx.markersPdf()).bytes] });
  assert.equal(env.detectedFromPlaceholders, true);
  return { env, s1, s2, t1: recipientToken(env, s1.email), t2: recipientToken(env, s2.email) };
}

/** Signer 1 signs with a typed signature (stamped as text) and typed values. */
async function signFirst(token: string) {
  const s = (await session(t, token)).json() as { fields: { fieldId: number; type: string }[] };
  const values: Record<string, string> = { TEXT: 'Net 30 days', NUMBER: '4217', RADIO: 'Annual' };
  const res = await complete(t, token, { fields: s.fields.map((f) => ({ fieldId: f.fieldId, value: values[f.type] ?? null })), signature: { kind: 'typed', text: 'Ana Pereira' } });
  assert.equal(res.statusCode, 200, res.body);
}

describe('the document a recipient is served', () => {
  test('before anyone acts: no marker text, other text kept; rendered once, then read from storage', async () => {
    const { env, t1, t2 } = await markerEnvelope('nomark');
    const original = await t.container.storage.get((await engineDoc(env)).original_key);
    assert.match(pdftotext(original!), MARKER, 'the fixture has markers to remove');

    const first = await served(t1);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.headers['content-type'], 'application/pdf');
    assert.equal(Number(first.headers['content-length']), first.rawPayload.length, 'a rendered version is sent with its length');
    const text = pdftotext(first.rawPayload);
    assert.doesNotMatch(text, MARKER);
    assert.doesNotMatch(text, /\{\{\s*(signature|date|text|initials|checkbox|number|dropdown|radio|name|email)/i);
    assert.match(text, /Agreement between the parties named below\./);
    assert.match(text, /\{\{ client_name \}\}/, 'a placeholder that is not ours stays');
    keep('recipient-document-before', first.rawPayload);

    // Rendered under its version's key; a later view, by anyone, reads that file.
    const key = progressKey(env.engineEnvelopeId, 0);
    const stored = await t.container.storage.get(key);
    assert.deepEqual(Buffer.from(stored!), Buffer.from(first.rawPayload));
    const marked = Buffer.concat([Buffer.from(stored!), Buffer.from('\n%served-from-storage\n')]);
    await t.container.storage.put(key, marked);
    const again = await served(t2);
    assert.equal(again.statusCode, 200);
    assert.deepEqual(again.rawPayload, marked, 'the second view was not rendered again');
    assert.equal(Number(again.headers['content-length']), marked.length, 'a stored version streams with its length');
  });

  test('signer 2 sees signer 1’s values; each version is rendered once; COMPLETED serves the sealed PDF', async () => {
    const { env, s1, t1, t2 } = await markerEnvelope('flow');
    assert.equal((await served(t2)).statusCode, 200);
    await signFirst(t1);

    const second = await served(t2);
    assert.equal(second.statusCode, 200, second.body);
    const text = pdftotext(second.rawPayload);
    for (const v of ['Ana Pereira', 'Net 30 days', '4217', 'Annual', s1.email, new Date().toISOString().slice(0, 10)]) assert.ok(text.includes(v), `signer 1's "${v}" is not on the document: ${text}`);
    assert.doesNotMatch(text, MARKER);
    assert.doesNotMatch(text, /Certificate of completion/, 'no certificate before sealing');
    assert.doesNotMatch(Buffer.from(second.rawPayload).toString('latin1'), /\/ByteRange/, 'no signature before sealing');
    assert.ok(!text.includes('Bo Chen'), 'signer 2 has not signed yet');
    keep('recipient-document-after-signer-1', second.rawPayload);

    // Signer 1's own link shows the same version, from storage.
    const key = progressKey(env.engineEnvelopeId, 1);
    const marked = Buffer.concat([Buffer.from((await t.container.storage.get(key))!), Buffer.from('\n%served-from-storage\n')]);
    await t.container.storage.put(key, marked);
    assert.deepEqual((await served(t1)).rawPayload, marked);
    assert.deepEqual((await served(t2)).rawPayload, marked);

    await signAs(t, t2, { DROPDOWN: 'Premium' });
    // SEALING: every signer acted, the seal is pending: the document as it stands, all values on it.
    const sealing = await served(t2);
    assert.equal(sealing.statusCode, 200);
    assert.match(pdftotext(sealing.rawPayload), /Premium/);

    await drain(t);
    const doc = await engineDoc(env);
    assert.equal(doc.status, 'COMPLETED');
    const sealed = await t.container.storage.get(doc.signed_key!);
    for (const token of [t1, t2]) {
      const res = await served(token);
      assert.equal(res.statusCode, 200);
      assert.deepEqual(res.rawPayload, Buffer.from(sealed!), 'after COMPLETED the sealed PDF is served');
    }
    assert.match(pdftotext(sealed!), /Certificate of completion/);
  });

  test('a document with no markers is served as prepared (nothing rendered) until someone acts', async () => {
    const a = person('plain-a', 'SIGNER', { signingOrder: 1 });
    const b = person('plain-b', 'SIGNER', { signingOrder: 2 });
    const env = await createEnvelope(t, { recipients: [a, b] });
    const before = await served(recipientToken(env, b.email));
    assert.deepEqual(before.rawPayload, Buffer.from((await t.container.storage.get((await engineDoc(env)).original_key))!));
    assert.equal(await t.container.storage.get(progressKey(env.engineEnvelopeId, 0)), undefined);
    await signAs(t, recipientToken(env, a.email));
    const after = await served(recipientToken(env, b.email));
    assert.equal(after.statusCode, 200);
    assert.ok(await t.container.storage.get(progressKey(env.engineEnvelopeId, 1)), 'a signature to show: rendered');
  });

  test('cancelled: 410 and no document', async () => {
    const { env, t1 } = await markerEnvelope('cancel');
    assert.equal((await served(t1)).statusCode, 200);
    const res = await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) });
    assert.equal(res.statusCode, 200, res.body);
    assertError(await served(t1), 410, 'ENVELOPE_NOT_ACTIVE');
  });

  test('the current version is kept by the blob sweep, superseded ones are collected, the purge removes everything', async () => {
    const { env, t1, t2 } = await markerEnvelope('sweep');
    await served(t1);
    await signFirst(t1);
    await served(t2);
    const v0 = progressKey(env.engineEnvelopeId, 0);
    const v1 = progressKey(env.engineEnvelopeId, 1);
    const fileOf = (key: string) => path.join(t.config.dataDir, 'blobs', ...key.split('/'));
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    for (const key of [v0, v1]) utimesSync(fileOf(key), twoHoursAgo, twoHoursAgo);
    const sweep = blobSweepJob({ db: t.container.db, storage: t.container.storage, owners: [engineBlobOwner(createLocalEngineRepo())] });
    await sweep.handle({}, {} as never);
    assert.equal(existsSync(fileOf(v0)), false, 'a superseded version is collected');
    assert.equal(existsSync(fileOf(v1)), true, 'the current version is kept');

    const res = await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(t.customer.apiKey) });
    assert.equal(res.statusCode, 200, res.body);
    await execSql(t, sql`UPDATE envelopes SET storage_expires_at = now() - interval '1 minute' WHERE id = ${env.envelopeId}`);
    assert.equal(await inTx(t, (tx) => t.container.envelopes.purgeDue(tx)), 1);
    await drain(t);
    const left = [];
    for await (const b of t.container.storage.list!(`documents/${env.engineEnvelopeId}/`)) left.push(b.key);
    assert.deepEqual(left, [], 'nothing under the document’s prefix outlives the purge');
  });
});

describe('fields placed by markers', () => {
  type Field = Envelope['fields'][number];
  const PAGE = { width: 612, height: 792 };
  const pts = (f: Field) => ({ x: (f.positionXPercent / 100) * PAGE.width, y: (f.positionYPercent / 100) * PAGE.height, w: (f.widthPercent / 100) * PAGE.width, h: (f.heightPercent / 100) * PAGE.height });

  test('each type gets its minimum size at its marker, square checkboxes and radios, inside the page, off the next marker', async () => {
    const sigW = measureText('{{signature, r1}}', 'Helvetica', 10);
    const pdf = await makePdf([
      [
        // Two markers on one line, the second close after the first.
        { text: '{{signature, r1}}', x: 72, y: 700, fontSize: 10 },
        { text: '{{date, r1}}', x: 72 + sigW + 6, y: 700, fontSize: 10 },
        { text: '{{initials, r1}}', x: 72, y: 600 },
        { text: '{{text, r1}}', x: 72, y: 540 },
        { text: '{{number, r1}}', x: 72, y: 480 },
        { text: '{{checkbox, r1}}', x: 72, y: 420 },
        { text: '{{radio, r1}}', x: 300, y: 420 },
        // Near the right edge: its minimum width does not fit after it.
        { text: '{{signature, r1}}', x: 540, y: 300, fontSize: 8 },
      ],
    ]);
    const s = person('sizes');
    const env = await createEnvelope(t, { recipients: [s], fields: [] }, { pdfs: [pdf] });
    const byType = (type: string) => env.fields.filter((f) => f.type === type);
    const [sig, edge] = byType('SIGNATURE').sort((a, b) => a.positionYPercent - b.positionYPercent);
    const [date] = byType('DATE');

    for (const f of env.fields) {
      assert.ok(f.positionXPercent >= 0 && f.positionYPercent >= 0, `${f.type} starts inside the page`);
      assert.ok(f.positionXPercent + f.widthPercent <= 100.0001 && f.positionYPercent + f.heightPercent <= 100.0001, `${f.type} ends inside the page`);
    }
    // SIGNATURE: at least 4 % of the page tall and 15 % wide, starting at its marker, centred on its line.
    for (const f of [sig, edge]) assert.ok(f.heightPercent >= 4 - 1e-6, `signature height ${f.heightPercent}`);
    assert.ok(edge.widthPercent >= 15 - 1e-6, `signature width ${edge.widthPercent}`);
    assert.ok(Math.abs(pts(sig).x - 72) < 0.5, `starts at its marker: ${pts(sig).x}`);
    const baseline = 792 - 700;
    assert.ok(pts(sig).y < baseline - 10 && pts(sig).y + pts(sig).h > baseline, 'the box spans the marker’s line');
    // Off the next marker on its line: the signature stops before the date marker starts.
    assert.ok(pts(sig).x + pts(sig).w <= pts(date).x - 1, `signature ends at ${pts(sig).x + pts(sig).w}, date starts at ${pts(date).x}`);
    assert.ok(pts(sig).w >= sigW - 0.01, 'never narrower than the marker itself');
    // Near the right edge: moved left to keep its minimum width inside the page.
    assert.ok(Math.abs(edge.positionXPercent + edge.widthPercent - 100) < 0.01, 'flush with the right edge');
    assert.ok(pts(edge).x < 539, 'moved left of its marker');
    // INITIALS, TEXT, NUMBER, DATE: at least 2.5 % tall.
    for (const type of ['INITIALS', 'TEXT', 'NUMBER', 'DATE']) for (const f of byType(type)) assert.ok(f.heightPercent >= 2.5 - 1e-6, `${type} height ${f.heightPercent}`);
    // CHECKBOX and RADIO: squares on the page, at least 2.5 % of its height.
    for (const type of ['CHECKBOX', 'RADIO']) {
      const [f] = byType(type);
      assert.ok(Math.abs(pts(f).w - pts(f).h) < 0.01, `${type} is square: ${pts(f).w} × ${pts(f).h}`);
      assert.ok(f.heightPercent >= 2.5 - 1e-6, `${type} height ${f.heightPercent}`);
    }
    assert.ok(Math.abs(pts(byType('RADIO')[0]).x - 300) < 0.5, 'the radio starts at its marker');
  });

  test('on rotated and cropped pages and along vertical text: each field covers its marker, inside the page', async () => {
    const { env } = await markerEnvelope('rotated');
    const rows = rowsOf<{ type: string; page: number; x: number; y: number; width: number; height: number; hide: { x: number; y: number; width: number; height: number } }>(
      await t.container.db.execute(sql`SELECT type, page, x, y, width, height, hide FROM engine_fields WHERE document_id = ${env.engineEnvelopeId}`),
    );
    assert.equal(rows.length, 12);
    const eps = 1e-3;
    for (const f of rows) {
      const m = f.hide;
      const where = `${f.type} on page ${f.page}`;
      // A square covers the start of its marker; every other field the whole marker.
      const square = f.type === 'CHECKBOX' || f.type === 'RADIO';
      const covers = (a: number, aSize: number, b: number, bSize: number) => a <= b + eps && a + aSize >= b + bSize - eps;
      const across = m.height > m.width ? covers(f.x, f.width, m.x, m.width) : covers(f.y, f.height, m.y, m.height);
      const along = square || (m.height > m.width ? covers(f.y, f.height, m.y, m.height) : covers(f.x, f.width, m.x, m.width));
      assert.ok(across && along, `${where} covers its marker`);
      assert.ok(f.x >= 0 && f.y >= 0 && f.x + f.width <= 100 + eps && f.y + f.height <= 100 + eps, `${where} is inside the page`);
      if (!square) assert.ok(f.width * f.height > m.width * m.height, `${where} is larger than its marker`);
    }
    // Page 6 (unrotated) has {{name, r2}} running bottom to top: its field is tall, 15 % of the page's height along the text.
    const name = rows.find((f) => f.type === 'NAME')!;
    assert.ok(name.height >= 15 - eps && name.height > name.width, `NAME ${name.width} × ${name.height}`);
  });

  test('fields given by coordinates keep their size', async () => {
    const s = person('coords');
    const env = await createEnvelope(t, { recipients: [s], fields: [{ type: 'SIGNATURE', recipientEmail: s.email, page: 1, positionX: 10, positionY: 20, width: 5, height: 1 }] });
    assert.deepEqual([env.fields[0].positionXPercent, env.fields[0].positionYPercent, env.fields[0].widthPercent, env.fields[0].heightPercent], [10, 20, 5, 1]);
  });
});
