/**
 * The expiry and retention sweeps: sealing is not expirable and a dead seal can be retried; retention
 * never deletes a live envelope's documents and a create cannot ask for a retention shorter than its
 * signing window; one failing row neither stops nor reorders the rest.
 */
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { and, eq, sql } from 'drizzle-orm';
import { jobs, operatorAlerts } from '../src/db/schema/index.js';
import { createLocalStorage } from '../src/providers/storage/index.js';
import { OPS_TOKEN, bearer, createTestApp, type TestApp } from './harness.js';
import {
  assertError,
  createEnvelope,
  drain,
  envelopeBody,
  execSql,
  getEnvelope,
  inTx,
  person,
  postMultipart,
  recipientToken,
  refundsFor,
  samplePdf,
  sigField,
  signAs,
} from './fixtures/envelopes.js';

let t: TestApp;
let blobDir: string;
/** While set, reading an original PDF fails: the seal job cannot get its input. */
let originalsUnreadable = false;

before(async () => {
  blobDir = mkdtempSync(path.join(tmpdir(), 'signet-sweeps-blobs-'));
  const local = createLocalStorage(blobDir);
  const storage = {
    ...local,
    get: async (key: string) => {
      if (originalsUnreadable && key.endsWith('/original.pdf')) throw new Error('storage unavailable');
      return local.get(key);
    },
  };
  t = await createTestApp({ overrides: { storage } });
});
after(async () => {
  await t.close();
  rmSync(blobDir, { recursive: true, force: true });
});

const download = (id: string, q = '') => t.app.inject({ url: `/v1/envelopes/${id}/download${q}`, headers: bearer(t.customer.apiKey) });
const alertsFor = (resourceId: string) => t.container.db.select().from(operatorAlerts).where(eq(operatorAlerts.resourceId, resourceId));
const expireDue = (limit?: number) => inTx(t, (tx) => t.container.envelopes.expireDue(tx, limit));
const purgeDue = (limit?: number) => inTx(t, (tx) => t.container.envelopes.purgeDue(tx, limit));
const pastWindow = (id: string, ago = '1 minute') => execSql(t, sql`UPDATE envelopes SET expires_at = now() - ${ago}::interval WHERE id = ${id}`);
const pastRetention = (id: string, ago = '1 minute') => execSql(t, sql`UPDATE envelopes SET storage_expires_at = now() - ${ago}::interval WHERE id = ${id}`);

/** Sent, and its only signer signed: the seal job is queued and the engine document is SEALING. */
async function signedNotSealed() {
  const s = person('sealing');
  const env = await createEnvelope(t, { title: 'Sealing', recipients: [s] });
  await drain(t);
  await signAs(t, recipientToken(env, s.email));
  return env;
}

describe('sealing is not expirable', () => {
  test('an envelope whose signers all signed is not expired by the sweep while its seal is pending; the seal completes it', async () => {
    const env = await signedNotSealed();
    await pastWindow(env.envelopeId);
    assert.equal(await expireDue(), 0);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'SENT');
    assert.deepEqual(await refundsFor(t, env.envelopeId), [], 'no refund of a signed envelope');

    await drain(t);
    const done = await getEnvelope(t, env.envelopeId);
    assert.equal(done.status, 'COMPLETED');
    assert.ok(!done.events!.some((e) => e.eventType === 'DOCUMENT_EXPIRED'));
    assert.equal((await download(env.envelopeId)).statusCode, 200);
  });

  test('a seal that ends dead raises a job_dead alert, is still not expired, and POST /ops/jobs/{id}/retry completes it', async () => {
    const env = await signedNotSealed();
    await execSql(t, sql`UPDATE jobs SET max_attempts = 1 WHERE type = 'engine.seal' AND status = 'queued'`);
    originalsUnreadable = true;
    try {
      await assert.rejects(drain(t), /engine\.seal.*storage unavailable/);
    } finally {
      originalsUnreadable = false;
    }
    const [dead] = await t.container.db.select().from(jobs).where(and(eq(jobs.type, 'engine.seal'), eq(jobs.status, 'dead')));
    assert.ok(dead, 'the seal job is dead');
    const alerts = await alertsFor(String(dead.id));
    assert.deepEqual(alerts.map((a) => [a.kind, a.resourceType]), [['job_dead', 'job']]);
    assert.match(alerts[0]!.message, /engine\.seal/);

    await pastWindow(env.envelopeId);
    assert.equal(await expireDue(), 0);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'SENT');

    const res = await t.app.inject({ method: 'POST', url: `/ops/jobs/${dead.id}/retry`, headers: bearer(OPS_TOKEN) });
    assert.equal(res.statusCode, 200, res.body);
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');
    assert.equal((await download(env.envelopeId)).statusCode, 200);
  });
});

describe('retention follows the state', () => {
  test('a live envelope past its retention date keeps its documents; they are purged once it ends', async () => {
    const s = person('live-purge');
    const env = await createEnvelope(t, { recipients: [s] });
    await drain(t);
    await pastRetention(env.envelopeId);
    assert.equal(await purgeDue(), 0);
    assert.equal((await download(env.envelopeId, '?version=original')).statusCode, 200);

    // It can still be signed and sealed: the seal needs the original.
    await signAs(t, recipientToken(env, s.email));
    await drain(t);
    assert.equal((await getEnvelope(t, env.envelopeId)).status, 'COMPLETED');
    assert.equal(await purgeDue(), 1);
    assertError(await download(env.envelopeId, '?version=original'), 410, 'DOCUMENT_PURGED');
  });

  test('storageExpiryDays must outlast the signing window: VALIDATION_ERROR naming the field the caller set', async () => {
    const s = person('short-retention');
    const post = async (payload: Record<string, unknown>) => postMultipart(t, envelopeBody([await samplePdf()], { recipients: [s], fields: [sigField(s.email)], ...payload }));

    // The default window is 30 days.
    const short = assertError(await post({ storageExpiryDays: 5 }), 400, 'VALIDATION_ERROR');
    assert.equal(short.details[0].path, 'payload.storageExpiryDays');
    const inside = assertError(await post({ storageExpiryDays: 2, expiresAt: new Date(Date.now() + 3 * 86_400_000).toISOString() }), 400, 'VALIDATION_ERROR');
    assert.equal(inside.details[0].path, 'payload.storageExpiryDays');
    // A window longer than the default retention (STORAGE_EXPIRY_DAYS, 365) names the window.
    const long = assertError(await post({ expiresAt: new Date(Date.now() + 400 * 86_400_000).toISOString() }), 400, 'VALIDATION_ERROR');
    assert.equal(long.details[0].path, 'payload.expiresAt');

    const ok = await post({ storageExpiryDays: 4, expiresAt: new Date(Date.now() + 3 * 86_400_000).toISOString() });
    assert.equal(ok.statusCode, 201, ok.body);
  });
});

describe('one failing row does not stop a sweep', () => {
  test('expiry takes the rows in the order they fell due', async () => {
    // Neither insertion order nor the (status, expires_at) index order is due-time order here.
    const later = await createEnvelope(t, { recipients: [person('due-later')], draft: true });
    const earlier = await createEnvelope(t, { recipients: [person('due-earlier')] });
    await drain(t);
    await pastWindow(later.envelopeId, '1 day');
    await pastWindow(earlier.envelopeId, '2 days');
    assert.equal(await expireDue(1), 1);
    assert.equal((await getEnvelope(t, earlier.envelopeId)).status, 'EXPIRED');
    assert.equal((await getEnvelope(t, later.envelopeId)).status, 'DRAFT');
    assert.equal(await expireDue(1), 1);
    assert.equal((await getEnvelope(t, later.envelopeId)).status, 'EXPIRED');
  });

  test('a row that throws is skipped and alerted once; the rows after it expire', async () => {
    const broken = await createEnvelope(t, { recipients: [person('broken-exp')] });
    const a = await createEnvelope(t, { recipients: [person('exp-a')] });
    const b = await createEnvelope(t, { recipients: [person('exp-b')] });
    await drain(t);
    // Its engine document is gone: reading its status throws.
    await execSql(t, sql`UPDATE envelopes SET engine_envelope_id = ${randomUUID()}, expires_at = now() - interval '3 days' WHERE id = ${broken.envelopeId}`);
    await pastWindow(a.envelopeId);
    await pastWindow(b.envelopeId);

    assert.equal(await expireDue(), 2);
    assert.equal((await getEnvelope(t, a.envelopeId)).status, 'EXPIRED');
    assert.equal((await getEnvelope(t, b.envelopeId)).status, 'EXPIRED');
    assert.equal(await expireDue(), 0, 'the broken row fails again, nothing else is due');
    const alerts = await alertsFor(broken.envelopeId);
    assert.deepEqual(alerts.map((x) => [x.kind, x.resourceType, x.customerId]), [['envelope_expiry_failed', 'envelope', t.customer.id]], 'alerted once, not on every tick');
  });

  test('a purge that throws is skipped and alerted once; the rows after it are purged', async () => {
    const s1 = person('purge-broken');
    const s2 = person('purge-ok');
    const broken = await createEnvelope(t, { recipients: [s1] });
    const ok = await createEnvelope(t, { recipients: [s2] });
    await drain(t);
    await signAs(t, recipientToken(broken, s1.email));
    await signAs(t, recipientToken(ok, s2.email));
    await drain(t);
    await execSql(t, sql`UPDATE envelopes SET engine_envelope_id = ${randomUUID()}, storage_expires_at = now() - interval '3 days' WHERE id = ${broken.envelopeId}`);
    await pastRetention(ok.envelopeId);

    assert.equal(await purgeDue(), 1);
    assertError(await download(ok.envelopeId, '?version=original'), 410, 'DOCUMENT_PURGED');
    assert.equal(await purgeDue(), 0);
    const alerts = await alertsFor(broken.envelopeId);
    assert.deepEqual(alerts.map((x) => [x.kind, x.resourceType]), [['envelope_purge_failed', 'envelope']]);
  });
});
