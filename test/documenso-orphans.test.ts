/**
 * The Documenso orphan sweep: drafts a failed create left in Documenso (its delete failed too) are
 * deleted once their grace has passed, by the job the periodic task queues; what Signet holds, what is
 * not marked as Signet's, and what is not a draft stay. Against the Documenso stand-in, on the real app.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { rowsOf } from '../src/db/client.js';
import { createDocumensoClient, type DocumensoClient } from '../src/engine/documenso/client.js';
import { createOrphanSweep, DOCUMENSO_ORPHAN_SWEEP_JOB } from '../src/engine/documenso/orphan-sweep.js';
import { enqueue } from '../src/jobs/queue.js';
import { createEnvelopesRepo } from '../src/modules/envelopes/envelopes.repo.js';
import { type DocumensoStandin, startDocumensoStandin } from './fixtures/documenso-standin.js';
import { drain, envelopeBody, person, postMultipart, samplePdf, sigField, type Envelope } from './fixtures/envelopes.js';
import { bearer, createTestApp, type TestApp } from './harness.js';

const HOUR = 3_600_000;
let standin: DocumensoStandin;
let t: TestApp;
let client: DocumensoClient;
/** The app's clock runs this far ahead of the real one (Documenso's createdAt stays real): drafts age. */
let ahead = 0;
const lines: { msg?: string; deleted?: number; held?: number; failed?: string; complete?: boolean }[] = [];
let runs = 0;

before(async () => {
  standin = await startDocumensoStandin();
  t = await createTestApp({
    env: { SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: standin.url, DOCUMENSO_API_KEY: standin.apiKey, DOCUMENSO_WEBHOOK_SECRET: 'documenso-webhook-secret-for-tests' },
    overrides: {
      clock: () => new Date(Date.now() + ahead),
      logger: pino({ level: 'info' }, { write: (s: string) => void lines.push(JSON.parse(s)) }),
    },
  });
  client = createDocumensoClient({ url: standin.url, apiKey: standin.apiKey, backoffMs: 5 });
  // The periodic task's own sweep of this interval runs first, before the tests count runs.
  await t.container.worker.start();
  for (let i = 0; i < 400 && !(await periodicSweep()); i++) await new Promise((r) => setTimeout(r, 50));
  await t.container.worker.stop();
});
after(async () => {
  await t?.close();
  await standin?.close();
});

/** The sweep job the periodic task queued (its dedupe key names the interval), once it ran. */
async function periodicSweep(): Promise<{ status: string; n: number } | undefined> {
  const rows = rowsOf<{ status: string }>(await t.container.db.execute(sql`SELECT status FROM jobs WHERE type = ${DOCUMENSO_ORPHAN_SWEEP_JOB} AND dedupe_key LIKE 'documenso-orphan-sweep:%'`));
  return rows[0]?.status === 'done' ? { status: 'done', n: rows.length } : undefined;
}

/** One run of the registered sweep job (as the periodic task queues it); its log line and its job row. */
async function sweep(): Promise<{ line: (typeof lines)[number]; job: { status: string; attempts: number } }> {
  const dedupeKey = `test-sweep-${++runs}`;
  const from = lines.length;
  await enqueue(t.container.db, { type: DOCUMENSO_ORPHAN_SWEEP_JOB, payload: {}, dedupeKey, maxAttempts: 3 });
  await drain(t);
  const [job] = rowsOf<{ status: string; attempts: number }>(await t.container.db.execute(sql`SELECT status, attempts FROM jobs WHERE dedupe_key = ${dedupeKey}`));
  const line = lines.slice(from).find((l) => l.msg?.startsWith('documenso: orphaned'));
  assert.ok(line, 'the sweep logs its counts');
  return { line, job };
}

/** A create whose transaction fails while Documenso refuses the delete: its draft stays in Documenso, held by no row. */
async function orphan(): Promise<string> {
  const a = person('orphan');
  const ctx = { actor: { customerId: t.customer.id, mode: 'live' as const, via: 'api_key' as const, keyId: null }, requestId: 'r-orphan', ip: '127.0.0.1', testModeHeader: false };
  const plan = await t.container.envelopes.plan(ctx, { payload: { recipients: [{ ...a, role: 'SIGNER' }], fields: [sigField(a.email)] } as never, parts: [await samplePdf()], draft: true });
  const id = plan.staged.engineEnvelopeId;
  // Every attempt of discardStaged's delete (one and two retries) answers 500.
  standin.failNext(3, 'error', { route: 'envelope.delete' });
  await assert.rejects(t.container.envelopes.commitPlanned(t.container.db, plan, async () => Promise.reject(new Error('commit failed'))), /commit failed/);
  assert.equal(standin.envelopes.get(id)?.envelope.status, 'DRAFT', 'the draft is left in Documenso');
  assert.equal((await createEnvelopesRepo().heldEngineEnvelopeIds(t.container.db, [id])).size, 0, 'no row holds it');
  return id;
}

/** An envelope made in Documenso directly (another system on the team, or Signet's process dying after the create). */
async function direct(externalId: string | undefined): Promise<string> {
  const { id } = await client.createEnvelope({
    payload: { title: 'Elsewhere', type: 'DOCUMENT', ...(externalId ? { externalId } : {}), recipients: [{ email: 'x@example.test', name: 'X', role: 'SIGNER', fields: [{ type: 'SIGNATURE', identifier: 0, page: 1, positionX: 10, positionY: 70, width: 20, height: 5 }] }] },
    files: [{ fileName: 'doc.pdf', content: await samplePdf() }],
  });
  return id;
}

async function signetDraft(): Promise<Envelope> {
  const a = person('held');
  const res = await postMultipart(t, envelopeBody([await samplePdf()], { recipients: [a], fields: [sigField(a.email)] }), { url: '/v1/envelopes/draft' });
  assert.equal(res.statusCode, 201, res.body);
  return res.json() as Envelope;
}

const exists = (id: string) => standin.envelopes.has(id);

describe('documenso orphan sweep', () => {
  test('the periodic task queues the sweep job when SIGNING_ENGINE=documenso, and it runs', async () => {
    assert.deepEqual(await periodicSweep(), { status: 'done', n: 1 });
    assert.ok(standin.calls['envelope.find'] >= 1);
  });

  test('an orphan is kept within its grace and deleted after it; held, unmarked and sent envelopes stay', async () => {
    ahead = 0;
    const lost = await orphan();
    const draft = await signetDraft();
    const [unmarked, foreign] = [await direct(undefined), await direct('crm:42')];
    // Marked as Signet's and held by no row, but no longer a draft: not the sweep's.
    const sent = await direct('signet:send');
    await client.distribute({ envelopeId: sent });

    const fresh = await sweep();
    assert.equal(fresh.job.status, 'done');
    assert.equal(fresh.line.deleted, 0);
    assert.ok(exists(lost), 'within the grace period the orphan stays (a create may still be in flight)');

    ahead = HOUR + 60_000;
    const late = await sweep();
    assert.equal(late.line.deleted, 1, JSON.stringify(late.line));
    assert.equal(late.line.complete, true);
    assert.ok(late.line.held! >= 1);
    assert.equal(exists(lost), false, 'the orphan is deleted');
    for (const id of [draft.engineEnvelopeId, unmarked, foreign, sent]) assert.ok(exists(id), id);
    assert.equal(standin.envelopes.get(sent)!.envelope.status, 'PENDING');
    // Signet's draft is whole: it still reads live.
    const status = await t.app.inject({ url: `/v1/envelopes/${draft.envelopeId}/status`, headers: bearer(t.customer.apiKey) });
    assert.equal(status.json().status, 'DRAFT', status.body);
    assert.deepEqual(standin.schemaErrors, []);
  });

  test('Documenso down during the sweep: the run ends softly (job done, a warning); the next run deletes the orphan', async () => {
    ahead = 0;
    const [lost, lost2] = [await orphan(), await orphan()];
    ahead = HOUR + 60_000;
    // Documenso answers again (its refusals above would otherwise count toward opening the circuit).
    await signetDraft();

    // The find fails on every attempt.
    standin.failNext(3, 'error', { route: 'envelope.find' });
    const down = await sweep();
    assert.deepEqual(down.job, { status: 'done', attempts: 1 });
    assert.equal(down.line.failed, 'DOCUMENSO_UNAVAILABLE');
    assert.ok(exists(lost) && exists(lost2));

    // The first delete fails on every attempt: the run stops there.
    standin.failNext(3, 'error', { route: 'envelope.delete' });
    const midway = await sweep();
    assert.deepEqual(midway.job, { status: 'done', attempts: 1 });
    assert.equal(midway.line.failed, 'DOCUMENSO_UNAVAILABLE');
    assert.equal(midway.line.deleted, 0);

    const back = await sweep();
    assert.equal(back.line.failed, undefined);
    assert.equal(back.line.deleted, 2);
    assert.equal(exists(lost) || exists(lost2), false);
  });

  test('a run is bounded; drafts Signet holds piling up first do not hide an orphan behind them from later runs', async () => {
    for (let i = 0; i < 3; i++) await signetDraft();
    // Signet's process died between Documenso's create and its commit: marked, held by nothing.
    const [a, b] = [await direct('signet:draft'), await direct('signet:send')];
    const bounded = createOrphanSweep({
      db: t.container.db,
      client,
      heldOf: createEnvelopesRepo().heldEngineEnvelopeIds,
      log: { info: () => {}, warn: () => {} },
      now: () => Date.now() + 2 * HOUR,
      perPage: 1,
      maxPages: 2,
    });
    const results = [];
    for (let i = 0; i < 20 && (exists(a) || exists(b)); i++) results.push(await bounded.run());
    assert.equal(exists(a) || exists(b), false, JSON.stringify(results));
    assert.ok(results.length > 2, 'it took several runs');
    assert.ok(results.every((r) => r.pages <= 2));
    // Deletions are bounded too, and the next run goes on.
    const [c, d] = [await direct('signet:draft'), await direct('signet:draft')];
    const one = createOrphanSweep({ db: t.container.db, client, heldOf: createEnvelopesRepo().heldEngineEnvelopeIds, log: { info: () => {}, warn: () => {} }, now: () => Date.now() + 2 * HOUR, maxDeletions: 1 });
    const first = await one.run();
    assert.equal(first.deleted, 1);
    assert.equal(first.complete, false);
    assert.equal(exists(c) && exists(d), false);
    const second = await one.run();
    assert.equal(second.deleted, 1);
    assert.equal(exists(c) || exists(d), false);
    for (const id of [...standin.envelopes.keys()]) {
      const e = standin.envelopes.get(id)!.envelope;
      // Whatever is left is held, unmarked or not a draft.
      if (e.status === 'DRAFT' && e.externalId?.startsWith('signet:')) assert.equal((await createEnvelopesRepo().heldEngineEnvelopeIds(t.container.db, [id])).size, 1, id);
    }
  });
});
