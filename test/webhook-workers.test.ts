/**
 * Deliveries survive their worker and scale across workers: worker processes (as `signet worker`
 * runs) on one shared database, a worker SIGKILLed in the middle of a POST, and two workers against
 * one PostgreSQL schema sharing 1,000 deliveries.
 */
import assert from 'node:assert/strict';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openDatabase, rowsOf, type Database } from '../src/db/client.js';
import { bearer, createTestApp, testPgliteImage, type TestApp } from './harness.js';
import { createEnvelope, person } from './fixtures/envelopes.js';
import { startReceiver, type ReceivedRequest, type Receiver } from './fixtures/receiver.js';
import { spawnWorker, type WorkerProcess } from './fixtures/worker-process.js';

const DATABASE_URL = process.env.DATABASE_URL;
const LEASE_MS = 1_500;

const cleanups: (() => Promise<unknown> | unknown)[] = [];
after(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

/** A database the test process and its worker processes share: a PGlite directory or a PostgreSQL schema. */
function sharedDatabase() {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-whk-'));
  const schema = DATABASE_URL ? `t_whk_${randomBytes(6).toString('hex')}` : undefined;
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  return {
    dataDir,
    schema,
    open: (): Promise<Database> => (DATABASE_URL ? openDatabase({ databaseUrl: DATABASE_URL, dataDir, poolSize: 10, schemaName: schema }) : testPgliteImage().then((pgliteImage) => openDatabase({ dataDir, pgliteImage }))),
    worker: (env: Record<string, string>, waitForStart = false) => spawnWorker({ dataDir, databaseUrl: DATABASE_URL, schema, env, waitForStart }),
  };
}

async function track<T extends TestApp | Receiver | WorkerProcess>(x: T): Promise<T> {
  cleanups.push(() => ('proc' in x ? x.kill('SIGKILL') : x.close()));
  return x;
}

const header = (r: ReceivedRequest, name: string) => r.headers[name] as string | undefined;

async function until<T>(what: string, check: () => Promise<T | undefined | false>, timeoutMs: number, onTimeout = () => ''): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${onTimeout()}`);
    await sleep(50);
  }
}

test('a worker killed in the middle of a delivery loses nothing: another worker sends it after the lease', { timeout: 90_000 }, async () => {
  const shared = sharedDatabase();
  const env = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', JOB_LEASE_MS: String(LEASE_MS), SCHEDULER_INTERVAL_MS: '100', WEBHOOK_TIMEOUT_MS: '60000' };
  // The receiver never answers the first POST: the worker is inside the request when it dies.
  const r = await track(await startReceiver({ replies: [{ hang: true }] }));

  let t = await createTestApp({ env, overrides: { database: await shared.open() } });
  const c = t.customer;
  const res = await t.app.inject({
    method: 'POST',
    url: '/v1/webhooks',
    headers: { ...bearer(c.apiKey), 'content-type': 'application/json' },
    payload: JSON.stringify({ url: r.url(), events: ['envelope.sent'] }),
  });
  assert.equal(res.statusCode, 201, res.body);
  const { id: webhookId, secret } = res.json();
  // The envelope's distribution (and with it envelope.sent and its delivery) is left to the worker process.
  const env1 = await createEnvelope(t, { title: 'Crash', recipients: [person('crash')] }, { apiKey: c.apiKey });
  // PGlite is opened by one process at a time: hand the directory over to the worker.
  if (!DATABASE_URL) await t.close();
  else cleanups.push(() => t.close());

  const first = await track(await shared.worker(env));
  const [hung] = await r.waitFor(1, 30_000);
  first.proc.kill('SIGKILL');
  const exit = await first.exited;
  assert.equal(exit.signal, 'SIGKILL');

  // Another worker (this process) takes over once the dead worker's lease lapses.
  if (!DATABASE_URL) {
    t = await createTestApp({ env, overrides: { database: await shared.open() } });
    cleanups.push(() => t.close());
  }
  // The dead worker's lease as the database holds it (its heartbeats may have moved it on): measured from
  // the first POST's arrival instead, a loaded machine's delay between claim and POST made a correct
  // resend look early.
  const [lease] = rowsOf<{ locked_until: Date | string }>(
    await t.container.db.execute(sql`SELECT locked_until FROM jobs WHERE type = 'webhook.deliver' AND status = 'running'`),
  );
  const leaseEnds = new Date(lease.locked_until).getTime();
  await t.container.worker.start();
  const [, again] = await r.waitFor(2, 15_000);
  const deliveryId = header(hung, 'x-service-delivery-id')!;
  assert.match(deliveryId, /^dlv_[0-9a-f-]{36}$/);
  assert.equal(header(again, 'x-service-delivery-id'), deliveryId, 'the same delivery, resent');
  // Date.now() is whole milliseconds; the lease is microseconds.
  assert.ok(again.receivedAt >= leaseEnds - 1, `resent ${leaseEnds - again.receivedAt} ms before the lease lapsed`);
  const sig = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(header(again, 'x-service-signature')!)!;
  assert.equal(createHmac('sha256', secret).update(`${sig[1]}.`).update(again.raw).digest('hex'), sig[2]);
  assert.equal(JSON.parse(again.raw.toString()).envelope.envelopeId, env1.envelopeId);

  const delivered = await until(
    'the delivery to be recorded',
    async () => {
      const list = await t.app.inject({ url: `/v1/webhooks/${webhookId}/deliveries`, headers: bearer(c.apiKey) });
      const d = list.json().data[0];
      return d?.status === 'SUCCESS' ? d : undefined;
    },
    10_000,
  );
  assert.equal(`dlv_${delivered.id}`, deliveryId);
  assert.equal(delivered.responseCode, 200);
  assert.ok(delivered.attempts >= 1);
  // The job was claimed twice: by the worker that died and by the one that finished it.
  const [job] = rowsOf<{ status: string; attempts: number }>(
    await t.container.db.execute(sql`SELECT status, attempts FROM jobs WHERE type = 'webhook.deliver' AND payload->>'deliveryId' = ${delivered.id}`),
  );
  assert.deepEqual({ status: job.status, attempts: Number(job.attempts) }, { status: 'done', attempts: 2 });
  await sleep(300);
  assert.equal(r.requests.length, 2);
});

test(
  'two worker processes on one PostgreSQL deliver 1,000 events: none lost, no attempt sent twice',
  { timeout: 120_000, skip: !DATABASE_URL && 'needs DATABASE_URL: PGlite is an in-process database that one process opens at a time, so two worker processes cannot share it' },
  async () => {
    const EVENTS = 1_000;
    const shared = sharedDatabase();
    const env = { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '1s', SCHEDULER_INTERVAL_MS: '100', WORKER_CONCURRENCY: '8' };

    // Every 10th delivery id seen fails its first attempt, so retries are shared out too.
    const failFirst = new Set<string>();
    const seen = new Map<string, number>();
    const inFlight = new Set<string>();
    const overlaps: string[] = [];
    const r = await track(
      await startReceiver({
        handler: async (req) => {
          const id = header(req, 'x-service-delivery-id') ?? '';
          if (inFlight.has(id)) overlaps.push(id);
          inFlight.add(id);
          const n = (seen.get(id) ?? 0) + 1;
          seen.set(id, n);
          if (n === 1 && seen.size % 10 === 0) failFirst.add(id);
          await sleep(2);
          inFlight.delete(id);
          return n === 1 && failFirst.has(id) ? 500 : 200;
        },
      }),
    );

    const t = await track(await createTestApp({ env, overrides: { database: await shared.open() } }));
    const res = await t.app.inject({
      method: 'POST',
      url: '/v1/webhooks',
      headers: { ...bearer(t.customer.apiKey), 'content-type': 'application/json' },
      payload: JSON.stringify({ url: r.url(), events: ['*'] }),
    });
    assert.equal(res.statusCode, 201, res.body);
    const webhookId: string = res.json().id;

    const workers = [await track(await shared.worker(env)), await track(await shared.worker(env))];

    // Events as envelope transitions record them: each fan-out inside the transaction of its event.
    const owner = { customerId: t.customer.id, mode: 'live' as const };
    for (let batch = 0; batch < EVENTS / 50; batch++) {
      await t.container.db.transaction(async (tx) => {
        for (let i = 0; i < 50; i++) {
          const envelopeId = randomUUID();
          await t.container.webhooks.fanOut(tx, {
            owner,
            envelopeId,
            eventId: null,
            event: 'envelope.sent',
            occurredAt: new Date(),
            payload: async () => ({ envelope: { envelopeId, status: 'SENT', title: `Event ${batch * 50 + i}`, recipients: [], createdAt: new Date().toISOString() }, recipient: null }),
          });
        }
      });
    }

    const counts = async () =>
      rowsOf<{ status: string; n: string | number }>(await t.container.db.execute(sql`SELECT status, count(*) AS n FROM webhook_deliveries WHERE webhook_id = ${webhookId} GROUP BY status`));
    await until(
      `${EVENTS} deliveries to succeed`,
      async () => (await counts()).some((x) => x.status === 'SUCCESS' && Number(x.n) === EVENTS),
      90_000,
      () => ` (receiver saw ${r.requests.length} requests)`,
    );
    // Late duplicates would show up now.
    await sleep(1_000);

    const rows = rowsOf<{ id: string; status: string; attempts: number }>(await t.container.db.execute(sql`SELECT id, status, attempts FROM webhook_deliveries WHERE webhook_id = ${webhookId}`));
    assert.equal(rows.length, EVENTS);
    assert.equal(failFirst.size, EVENTS / 10);
    // None lost: the receiver saw exactly the stored delivery ids.
    assert.deepEqual([...seen.keys()].sort(), rows.map((d) => `dlv_${d.id}`).sort());
    // None sent twice at one attempt: each id arrived once per recorded attempt, never two at a time.
    const wrong = rows.filter((d) => {
      const expected = failFirst.has(`dlv_${d.id}`) ? 2 : 1;
      return d.status !== 'SUCCESS' || Number(d.attempts) !== expected || seen.get(`dlv_${d.id}`) !== expected;
    });
    assert.deepEqual(wrong.slice(0, 5), [], `${wrong.length} deliveries with unexpected attempts or arrivals`);
    assert.deepEqual(overlaps, []);
    assert.equal(r.requests.length, EVENTS + EVENTS / 10);
    const [jobs] = rowsOf<{ n: string | number }>(await t.container.db.execute(sql`SELECT count(*) AS n FROM jobs WHERE type = 'webhook.deliver' AND status <> 'done'`));
    assert.equal(Number(jobs.n), 0);
    // Both processes did share the work: each logged some of the first-attempt failures it handled.
    for (const w of workers) {
      const failures = w.output.filter((l) => l.includes('"msg":"job failed"')).length;
      assert.ok(failures > 0, `worker ${w.workerId} handled none of the failing attempts:\n${w.output.slice(-5).join('\n')}`);
    }
  },
);
