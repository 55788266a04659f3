/**
 * Files written before a commit (DESIGN §4.12, §4.14): a create that will be refused for money is
 * refused before the PDF is parsed or stored, and a periodic sweep collects blobs no row references
 * once they are an hour old, keeping referenced and recent ones.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { createLocalStorage } from '../src/providers/storage/index.js';
import { createTestApp, type TestApp } from './harness.js';
import { assertError, createEnvelope, envelopeBody, person, postMultipart, samplePdf, sigField } from './fixtures/envelopes.js';

let t: TestApp;
before(async () => {
  t = await createTestApp({ env: { SCHEDULER_INTERVAL_MS: '100' } });
});
after(() => t?.close());

const blobsDir = () => path.join(t.config.dataDir, 'blobs');
/** Every file under DATA_DIR/blobs (temporary files of atomic writes included). */
function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
}

async function body() {
  const r = person('payer');
  return envelopeBody([await samplePdf()], { title: 'refused', recipients: [r], fields: [sigField(r.email)] });
}

describe('affordability before parsing and storing', () => {
  test('ten uploads refused for balance (402) leave no file under DATA_DIR/blobs', async () => {
    const broke = await t.createCustomer(0);
    const before = filesUnder(blobsDir()).length;
    for (let i = 0; i < 10; i++) {
      const res = await postMultipart(t, await body(), { apiKey: broke.apiKey });
      assertError(res, 402, 'INSUFFICIENT_BALANCE');
    }
    assert.equal(filesUnder(blobsDir()).length, before, 'no blob was written for a refused create');
  });

  test('the refusal comes before the parse: a broken PDF from a customer who cannot pay is a 402', async () => {
    const broke = await t.createCustomer(0);
    const r = person('payer');
    const res = await postMultipart(t, envelopeBody([Buffer.from('%PDF-1.7 not really')], { recipients: [r], fields: [sigField(r.email)] }), { apiKey: broke.apiKey });
    assertError(res, 402, 'INSUFFICIENT_BALANCE');
  });

  test('a used-up sandbox is refused (402) before storing too; a draft, which is not charged, still goes through', async () => {
    const c = await t.createCustomer(0);
    await t.container.db.execute(sql`UPDATE customers SET sandbox_used = sandbox_limit WHERE id = ${c.id}`);
    const before = filesUnder(blobsDir()).length;
    const res = await postMultipart(t, await body(), { apiKey: c.testApiKey });
    assertError(res, 402, 'SANDBOX_LIMIT_REACHED');
    assert.equal(filesUnder(blobsDir()).length, before);

    const draft = await postMultipart(t, await body(), { apiKey: c.apiKey, url: '/v1/envelopes/draft' });
    assert.equal(draft.statusCode, 201, draft.body);
  });
});

describe('sweep of unreferenced blobs', () => {
  test('an unreferenced blob older than an hour is removed; referenced and recent ones are kept', async () => {
    const signer = person('kept');
    const env = await createEnvelope(t, { title: 'kept', recipients: [signer] });
    const [doc] = rowsOf<{ original_key: string }>(await t.container.db.execute(sql`SELECT original_key FROM engine_documents WHERE id = ${env.engineEnvelopeId}`));
    const referenced = doc.original_key;
    // A create that rolled back after storing, and a signature image of an attempt that failed.
    const orphan = `documents/${randomUUID()}/original.pdf`;
    const orphanImage = `documents/${env.engineEnvelopeId}/signatures/999999.png`;
    const recent = `documents/${randomUUID()}/original.pdf`;
    for (const key of [orphan, orphanImage, recent]) await t.container.storage.put(key, Buffer.from('%PDF-1.7 orphan'));
    const fileOf = (key: string) => path.join(blobsDir(), ...key.split('/'));
    const twoHoursAgo = new Date(Date.now() - 2 * 3_600_000);
    for (const key of [orphan, orphanImage, referenced]) utimesSync(fileOf(key), twoHoursAgo, twoHoursAgo);

    await t.container.worker.start();
    try {
      for (const deadline = Date.now() + 15_000; existsSync(fileOf(orphan)) || existsSync(fileOf(orphanImage)); await sleep(50)) {
        if (Date.now() > deadline) throw new Error('the sweep did not remove the unreferenced blobs');
      }
    } finally {
      await t.container.worker.stop();
    }
    assert.ok(existsSync(fileOf(referenced)), 'a blob a row references is kept, however old');
    assert.ok(existsSync(fileOf(recent)), 'a recent blob may belong to a transaction still open');
    assert.ok(await t.container.storage.get(referenced));
  });
});

test('local storage lists the keys under a prefix with their write time, never temporary files', async () => {
  const root = mkdtempSync(path.join(tmpdir(), 'signet-list-'));
  try {
    const storage = createLocalStorage(root);
    await storage.put('documents/a/original.pdf', Buffer.from('a'));
    await storage.put('documents/a/signatures/1.png', Buffer.from('b'));
    await storage.put('other/x', Buffer.from('c'));
    writeFileSync(path.join(root, 'documents', 'a', '.tmp-original.pdf-0011'), 'partial');
    const listed = [];
    for await (const b of storage.list!('documents/')) listed.push(b);
    assert.deepEqual(listed.map((b) => b.key).sort(), ['documents/a/original.pdf', 'documents/a/signatures/1.png']);
    assert.ok(listed.every((b) => b.modifiedAt instanceof Date && Date.now() - b.modifiedAt.getTime() < 60_000));
    const none = [];
    for await (const b of storage.list!('missing/')) none.push(b);
    assert.deepEqual(none, []);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
