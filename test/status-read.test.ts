/**
 * GET /v1/envelopes/{id}/status reads the engine (it wins) without queueing pollers on the envelope's
 * lock: the lock is taken only when the stored copy is stale. PostgreSQL only: PGlite runs one
 * statement at a time, so a transaction holding the lock there blocks every read whatever the code does.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { envelopeBody, newKey, postMultipart, samplePdf } from './fixtures/envelopes.js';
import { bearer, createTestApp, type TestApp } from './harness.js';

const onPostgres = Boolean(process.env.DATABASE_URL);
let t: TestApp;
before(async () => {
  t = await createTestApp({ creditCents: 1_000 });
});
after(() => t.close());

test('a status read in step answers while another transaction holds the envelope lock', { skip: onPostgres ? false : 'needs concurrent connections (DATABASE_URL)' }, async () => {
  const signer = { email: 's1@example.com', name: 'Signer 1', role: 'SIGNER' };
  const body = envelopeBody([await samplePdf()], { title: 'Polled', recipients: [signer], fields: [{ type: 'SIGNATURE', recipientEmail: signer.email, page: 1, positionX: 10, positionY: 70, width: 30, height: 6 }] });
  const created = await postMultipart(t, body, { apiKey: t.customer.apiKey, key: newKey() });
  assert.equal(created.statusCode, 201, created.body);
  const { envelopeId } = created.json() as { envelopeId: string };
  const status = () => t.app.inject({ url: `/v1/envelopes/${envelopeId}/status`, headers: bearer(t.customer.apiKey) });
  assert.equal((await status()).statusCode, 200); // in step from here on

  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const lockTaken = new Promise<void>((r) => (locked = r));
  const holder = t.container.db.transaction(async (tx) => {
    await tx.execute(sql`SELECT id FROM envelopes WHERE id = ${envelopeId} FOR UPDATE`);
    locked();
    await held;
  });
  await lockTaken;
  try {
    // A deadlock detector, not a timing: a read queued on the lock never answers while it is held.
    const outcome = await Promise.race([status().then((r) => r.statusCode), sleep(5_000).then(() => 'still waiting for the lock')]);
    assert.equal(outcome, 200);
  } finally {
    release();
    await holder;
  }
});
