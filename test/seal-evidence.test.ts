/**
 * Trusted time and long-term validation through the running app, with real local peers
 * (test/fixtures/pki.ts): an envelope sealed with an operator certificate of a test CA at B-LTA; a TSA
 * that is down leaves it SEALING with its job failing, then dead with a job_dead alert, and it
 * completes once the TSA is back; POST /v1/documents/verify then shows the evidence (TSA time, level,
 * DSS revocation data), and a file another installation sealed stays NOT_SEALED. Archival
 * re-timestamping appends a document timestamp once the TSA's certificate is renewed, and both the
 * earlier and the new file verify.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { archivePeriodicTask } from '../src/engine/local/archive-job.js';
import { closePdfWorkers, prepareDocument } from '../src/pdf/prepare.js';
import { sealDocument } from '../src/pdf/seal.js';
import { loadSigner } from '../src/providers/certs/signer.js';
import { OPS_TOKEN, bearer, createTestApp, type TestApp } from './harness.js';
import { createEnvelope, drain, getEnvelope, multipart, person, recipientToken, signAs } from './fixtures/envelopes.js';
import { PKI_PASS, startTestPki, type TestPki } from './fixtures/pki.js';
import * as fx from './fixtures/pdfs.js';

let pki: TestPki;
let t: TestApp;

before(async () => {
  pki = await startTestPki();
  t = await createTestApp({
    env: { SIGNING_CERT_P12_PATH: pki.signerP12, SIGNING_CERT_PASSPHRASE: PKI_PASS, SIGNING_TSA_URL: pki.tsaUrl, SIGNING_TSA_TIMEOUT_MS: '2000', SIGNING_PADES_LEVEL: 'B-LTA', SIGNING_REVOCATION_TIMEOUT_MS: '2000' },
  });
});
after(async () => {
  await t?.close();
  await closePdfWorkers();
  await pki?.close();
});

type JobRow = { id: number | string; status: string; attempts: number; last_error: string | null };
const sealJobOf = async (documentId: string): Promise<JobRow | undefined> =>
  rowsOf<JobRow>(await t.container.db.execute(sql`SELECT id, status, attempts, last_error FROM jobs WHERE type = 'engine.seal' AND payload->>'documentId' = ${documentId}`))[0];

/** Runs the worker until `done` holds for the seal job (failed attempts are the point here, so drain() is not used). */
async function runUntil(documentId: string, done: (j: JobRow) => boolean, timeoutMs = 120_000): Promise<JobRow> {
  await t.container.worker.start();
  const deadline = Date.now() + timeoutMs;
  try {
    for (;;) {
      t.container.worker.wake();
      const job = await sealJobOf(documentId);
      if (job && done(job)) return job;
      if (Date.now() > deadline) throw new Error(`seal job not there after ${timeoutMs} ms: ${JSON.stringify(job)}`);
      // A failed attempt waits its backoff: bring it forward.
      await t.container.db.execute(sql`UPDATE jobs SET run_at = now() WHERE type = 'engine.seal' AND status = 'queued'`);
      await sleep(50);
    }
  } finally {
    await t.container.worker.stop();
  }
}

const documentStatus = async (documentId: string) => rowsOf<{ status: string }>(await t.container.db.execute(sql`SELECT status FROM engine_documents WHERE id = ${documentId}`))[0]?.status;

const verify = async (bytes: Uint8Array) => {
  const mp = multipart([{ name: 'file', value: bytes, filename: 'document.pdf' }]);
  const res = await t.app.inject({ method: 'POST', url: '/v1/documents/verify', headers: { 'content-type': mp.contentType }, payload: mp.body });
  assert.equal(res.statusCode, 200, res.body);
  return res.json();
};

describe('sealing with a TSA through the app', () => {
  let sealed: Buffer;

  test('a TSA that is down leaves the envelope SEALING, the job dead with an alert; it completes once the TSA is back', async (ctx) => {
    const a = person('tsa');
    const env = await createEnvelope(t, { title: 'Timestamped agreement', recipients: [a] });
    await drain(t);
    pki.tsa.down = true;
    ctx.after(() => void (pki.tsa.down = false));
    await signAs(t, recipientToken(env, a.email));
    const documentId = env.engineEnvelopeId;
    const failed = await runUntil(documentId, (j) => j.attempts >= 1 && j.status === 'queued');
    assert.match(failed.last_error ?? '', /No timestamp authority answered/);
    assert.doesNotMatch(failed.last_error ?? '', /B-B/);
    assert.equal(await documentStatus(documentId), 'SEALING');
    assert.notEqual((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');

    // Its last attempt: the job ends dead and an operator alert says so.
    await t.container.db.execute(sql`UPDATE jobs SET max_attempts = attempts + 1 WHERE id = ${Number(failed.id)}`);
    const dead = await runUntil(documentId, (j) => j.status === 'dead');
    assert.equal(await documentStatus(documentId), 'SEALING');
    const alerts = await t.app.inject({ url: '/ops/alerts', headers: bearer(OPS_TOKEN) });
    const alert = alerts.json().data.find((x: { kind: string; resourceId: string }) => x.kind === 'job_dead' && x.resourceId === String(dead.id));
    assert.ok(alert, alerts.body);
    assert.match(alert.message, /engine\.seal.*No timestamp authority answered/);

    pki.tsa.down = false;
    const retried = await t.app.inject({ method: 'POST', url: `/ops/jobs/${dead.id}/retry`, headers: { ...bearer(OPS_TOKEN), 'idempotency-key': `retry-${dead.id}` } });
    assert.equal(retried.statusCode, 200, retried.body);
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');
    const dl = await t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/download`, headers: bearer(t.customer.apiKey) });
    assert.equal(dl.statusCode, 200);
    sealed = dl.rawPayload;
  });

  test('POST /v1/documents/verify shows the TSA time, the level and the revocation data', async () => {
    assert.ok(sealed, 'sealed by the test before');
    const v = await verify(sealed);
    assert.equal(v.status, 'SEALED');
    const e = v.evidence;
    assert.equal(e.level, 'B-LTA');
    assert.equal(e.timeSource, 'TSA');
    assert.equal(e.timestamp.tsa, 'Signet Test TSA');
    assert.equal(e.timestamp.verified, true);
    assert.equal(e.timestamp.matchesSignature, true);
    assert.equal(e.signatureTime, e.timestamp.time);
    assert.ok(Math.abs(Date.parse(e.signatureTime) - Date.now()) < 120_000, e.signatureTime);
    assert.ok(e.dss.ocspResponses >= 3 && e.dss.certificates >= 4, JSON.stringify(e.dss));
    assert.equal(e.documentTimestamps.length, 1);
    assert.equal(e.documentTimestamps[0].verified, true);

    // A byte of the token changed (in the unsigned part of the CMS): the seal still verifies, its time no longer counts as the TSA's.
    const tampered = Buffer.from(sealed);
    const at = tampered.indexOf(Buffer.from('Signet Test TSA').toString('hex').toUpperCase());
    assert.ok(at > 0, 'the TSA certificate inside the signature');
    tampered[at] = tampered[at] === 0x35 ? 0x36 : 0x35;
    const tv = await verify(tampered);
    assert.equal(tv.evidence.timeSource, 'SIGNER_CLOCK');
    assert.equal(tv.evidence.level, 'B-B');
    assert.equal(tv.evidence.timestamp.verified, false);
  });

  test('validation data appended by someone else after the seal raises nothing; a hostile tail costs little', async () => {
    assert.ok(sealed, 'sealed by the first test');
    // A B-LTA file with a forged DSS and a junk "document timestamp" appended: changed, and the evidence stops at the seal.
    const fakeDss = `\n99 0 obj\n<<\n/Type /DSS\n/OCSPs [${'1 0 R '.repeat(5000)}]\n/CRLs [2 0 R]\n>>\nendobj\n`;
    const junkSig = `\n98 0 obj\n<< /Type /DocTimeStamp /ByteRange [0 10 20 30] /Contents <3083${'ff'.repeat(3)}${'00'.repeat(200_000)}> >>\nendobj\n`;
    const forged = Buffer.concat([sealed, Buffer.from(fakeDss + junkSig)]);
    const started = performance.now();
    const v = await verify(forged);
    assert.ok(performance.now() - started < 2_000);
    assert.equal(v.status, 'MODIFIED');
    assert.equal(v.evidence.level, 'B-T', 'only the timestamp inside the signature counts');
    assert.equal(v.evidence.dss, null);
    assert.deepEqual(v.evidence.documentTimestamps, []);
  });

  test("a file sealed with another installation's key is NOT_SEALED, with no evidence", async () => {
    const other = await loadSigner({ dataDir: pki.dir + '/other' });
    const doc = await prepareDocument([await fx.plainPdf(1)], { timeoutMs: 60_000, maxMemoryMb: 256 });
    const foreign = await sealDocument({
      original: doc.bytes,
      fields: [],
      hide: [],
      certificate: { envelopeId: 'env_foreign', title: 'Foreign', documentSha256: doc.sha256, completedAt: new Date().toISOString(), recipients: [], events: [] },
      signer: other.signer,
      pades: { level: 'B-T', tsa: { urls: [pki.tsaUrl], headers: {}, timeoutMs: 5_000 } },
    });
    const v = await verify(foreign);
    assert.equal(v.status, 'NOT_SEALED');
    assert.equal(v.evidence, null);
  });
});

describe('archival re-timestamping (SIGNING_ARCHIVE_RETIMESTAMP_DAYS)', () => {
  let a2: TestApp;
  before(async () => {
    a2 = await createTestApp({
      env: { SIGNING_CERT_P12_PATH: pki.signerP12, SIGNING_CERT_PASSPHRASE: PKI_PASS, SIGNING_TSA_URL: pki.tsaUrl, SIGNING_PADES_LEVEL: 'B-LTA', SIGNING_ARCHIVE_RETIMESTAMP_DAYS: '400', SCHEDULER_INTERVAL_MS: '3600000' },
    });
  });
  after(() => a2?.close());

  const row = async (id: string) =>
    rowsOf<{ signed_key: string; sealed_sha256: string; archive_expires_at: Date | string }>(await a2.container.db.execute(sql`SELECT signed_key, sealed_sha256, archive_expires_at FROM engine_documents WHERE id = ${id}`))[0];
  const queueDue = () => a2.container.db.transaction((tx) => archivePeriodicTask({ days: 400 }).run(tx));
  const verifyOn = async (bytes: Uint8Array) => {
    const mp = multipart([{ name: 'file', value: bytes, filename: 'document.pdf' }]);
    const res = await a2.app.inject({ method: 'POST', url: '/v1/documents/verify', headers: { 'content-type': mp.contentType }, payload: mp.body });
    assert.equal(res.statusCode, 200, res.body);
    return res.json();
  };

  test('a document whose TSA certificate nears expiry gets a new document timestamp; the old and new files both verify', async () => {
    const p = person('archive');
    const env = await createEnvelope(a2, { title: 'Kept for years', recipients: [p] });
    await drain(a2);
    await signAs(a2, recipientToken(env, p.email));
    await drain(a2);
    const id = env.engineEnvelopeId;
    const first = await row(id);
    const firstExpiry = new Date(first.archive_expires_at);
    assert.ok(firstExpiry.getTime() - Date.now() < 366 * 86_400_000, 'the TSA certificate of the seal expires within a year');
    const oldFile = (await a2.container.storage.get(first.signed_key))!;

    // The same TSA certificate again would extend nothing: the job fails (and would end dead with an alert).
    await queueDue();
    await assert.rejects(drain(a2), /would not extend its verifiability/);
    assert.equal((await row(id)).signed_key, first.signed_key, 'the stored file is untouched');

    // The TSA renewed its certificate: the retry re-timestamps.
    await pki.renewTsa(730);
    await a2.container.db.execute(sql`UPDATE jobs SET run_at = now() WHERE type = 'engine.archive-retimestamp'`);
    await drain(a2);
    const second = await row(id);
    assert.notEqual(second.signed_key, first.signed_key);
    assert.notEqual(second.sealed_sha256, first.sealed_sha256);
    assert.ok(new Date(second.archive_expires_at).getTime() > firstExpiry.getTime() + 300 * 86_400_000, 'the horizon moved to the renewed certificate');
    const newFile = (await a2.container.storage.get(second.signed_key))!;
    assert.ok(Buffer.from(newFile.subarray(0, oldFile.length)).equals(Buffer.from(oldFile)), 'appended: the earlier file is a prefix of the new one');

    const vNew = await verifyOn(newFile);
    assert.equal(vNew.status, 'SEALED');
    assert.equal(vNew.envelope.envelopeId, env.envelopeId);
    assert.equal(vNew.evidence.level, 'B-LTA');
    assert.equal(vNew.evidence.documentTimestamps.length, 2);
    assert.ok(vNew.evidence.documentTimestamps.every((d: { verified: boolean }) => d.verified));
    const vOld = await verifyOn(oldFile);
    assert.equal(vOld.status, 'SEALED', 'the file served before the re-timestamp is still recognised');
    assert.equal(vOld.envelope.envelopeId, env.envelopeId);

    // Safe to run again: not due any more, nothing queued, nothing changed.
    await queueDue();
    await drain(a2);
    const jobs = rowsOf<{ status: string }>(await a2.container.db.execute(sql`SELECT status FROM jobs WHERE type = 'engine.archive-retimestamp'`));
    assert.deepEqual(jobs.map((j) => j.status), ['done']);
    assert.equal((await row(id)).signed_key, second.signed_key);
  });
});
