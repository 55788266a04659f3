import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { pino } from 'pino';
import { rowsOf } from '../src/db/client.js';
import { enqueue } from '../src/jobs/queue.js';
import { createEnvelope, signer } from './fixtures/envelopes.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';
import { OPS_TOKEN, bearer, createTestApp, type TestApp } from './harness.js';

type Labels = Record<string, string>;

/** The value of one sample in Prometheus text: the metric `name` whose labels include `labels`; undefined when absent. */
function sample(text: string, name: string, labels: Labels = {}): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const own = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.entries(labels).every(([k, v]) => own[k] === v)) return Number(m[3]);
  }
  return undefined;
}

async function scrape(target: TestApp): Promise<string> {
  const res = await target.app.inject({ url: '/metrics', headers: bearer(OPS_TOKEN) });
  assert.equal(res.statusCode, 200, res.body);
  return res.body;
}

/** Scrapes until `check` holds (the worker runs jobs in the background), waking the worker each time. */
async function until(target: TestApp, what: string, check: (text: string) => boolean, timeoutMs = 120_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await scrape(target);
    if (check(text)) return text;
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    target.container.worker.wake();
    await sleep(100);
  }
}

// The worker's log lines, captured: they must name the request a job was enqueued for.
const logLines: Record<string, unknown>[] = [];
const logger = pino(
  { level: 'warn' },
  new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  }),
);

let t: TestApp;
let receiver: Receiver;
before(async () => {
  // /hook fails once then takes deliveries; /gone answers 410 (the registration is disabled: dead at once).
  let hookCalls = 0;
  receiver = await startReceiver({ handler: (req) => (req.path === '/gone' ? 410 : hookCalls++ === 0 ? 500 : 200) });
  t = await createTestApp({
    creditCents: 1000,
    env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', WEBHOOK_RETRY_SCHEDULE: '1s', SCHEDULER_INTERVAL_MS: '60000', LOG_LEVEL: 'warn' },
    overrides: { logger },
  });
});
after(async () => {
  await t?.close();
  await receiver?.close();
});

describe('GET /metrics: access', () => {
  test('without the operator token: 401 with the code the /ops routes answer', async () => {
    const ops = await t.app.inject({ url: '/ops/alerts' });
    const res = await t.app.inject({ url: '/metrics' });
    assert.equal(res.statusCode, 401, res.body);
    assert.equal(res.json().code, ops.json().code);
    assert.equal(res.json().code, 'UNAUTHORIZED');
    const wrong = await t.app.inject({ url: '/metrics', headers: bearer('not-the-ops-token-0123456789') });
    assert.equal(wrong.statusCode, 401, wrong.body);
    assert.equal(wrong.json().code, 'UNAUTHORIZED');
  });

  test('with it: Prometheus text, with the process metrics', async () => {
    const res = await t.app.inject({ url: '/metrics', headers: bearer(OPS_TOKEN) });
    assert.equal(res.statusCode, 200, res.body);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    assert.ok(sample(res.body, 'process_cpu_user_seconds_total')! >= 0, 'process metrics');
    assert.ok(sample(res.body, 'nodejs_heap_size_used_bytes')! > 0, 'Node.js metrics');
    assert.equal(sample(res.body, 'signet_db_pool_max'), t.container.database.kind === 'pglite' ? 1 : 20);
    assert.ok(sample(res.body, 'signet_db_pool_connections')! >= 1);
    if (t.container.database.kind === 'postgres') assert.equal(sample(res.body, 'signet_db_pool_waiting'), 0);
  });

  test('METRICS_PUBLIC=true: served without a token', async () => {
    const open = await createTestApp({ env: { METRICS_PUBLIC: 'true' } });
    try {
      const res = await open.app.inject({ url: '/metrics' });
      assert.equal(res.statusCode, 200, res.body);
      assert.match(res.body, /^# HELP signet_http_requests_total /m);
    } finally {
      await open.close();
    }
  });

  test('each app counts in a registry of its own', async () => {
    const other = await createTestApp();
    try {
      await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) });
      assert.equal(sample(await scrape(other), 'signet_http_requests_total', { route: '/v1/account' }), undefined);
    } finally {
      await other.close();
    }
  });
});

describe('GET /metrics: requests', () => {
  test('a request counts under its route pattern and status, with its latency; never under its URL', async () => {
    const id = randomUUID();
    const labels = { method: 'GET', route: '/v1/envelopes/:id' };
    const before = await scrape(t);
    const res = await t.app.inject({ url: `/v1/envelopes/${id}`, headers: bearer(t.customer.apiKey) });
    assert.equal(res.statusCode, 404, res.body);
    const unmatched = await t.app.inject({ url: `/no/such/${id}` });
    assert.equal(unmatched.statusCode, 404);
    const text = await scrape(t);
    const delta = (name: string, l: Labels) => (sample(text, name, l) ?? 0) - (sample(before, name, l) ?? 0);
    assert.equal(delta('signet_http_requests_total', { ...labels, status_code: '404' }), 1);
    assert.equal(delta('signet_http_request_duration_seconds_count', labels), 1);
    assert.equal(delta('signet_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' }), 1);
    assert.ok(delta('signet_http_request_duration_seconds_sum', labels) > 0);
    assert.equal(delta('signet_http_requests_total', { method: 'GET', route: 'unmatched', status_code: '404' }), 1);
    assert.ok(!text.includes(id), 'no raw URL in a label');
  });
});

describe('GET /metrics: the job queue', () => {
  test('a due job shows in depth and age, a later one as scheduled, a dead one as dead; gone, they read 0', async () => {
    const db = t.container.db;
    await db.transaction((tx) =>
      enqueue(tx, [
        { type: 'metrics.probe', payload: {}, runAt: new Date(Date.now() - 90_000) },
        { type: 'metrics.probe', payload: {}, runAt: new Date(Date.now() + 3_600_000) },
        { type: 'metrics.dead', payload: {} },
      ]),
    );
    await db.execute(sql`UPDATE jobs SET status = 'dead' WHERE type = 'metrics.dead'`);
    let text = await scrape(t);
    assert.equal(sample(text, 'signet_job_stats_ok'), 1);
    assert.equal(sample(text, 'signet_job_queue_depth', { type: 'metrics.probe' }), 1);
    const age = sample(text, 'signet_job_queue_oldest_age_seconds', { type: 'metrics.probe' })!;
    assert.ok(age >= 89 && age < 600, `oldest age ${age}`);
    assert.equal(sample(text, 'signet_jobs_scheduled', { type: 'metrics.probe' }), 1);
    assert.equal(sample(text, 'signet_jobs_running', { type: 'metrics.probe' }), 0);
    assert.equal(sample(text, 'signet_jobs_dead', { type: 'metrics.dead' }), 1);

    await db.execute(sql`UPDATE jobs SET status = 'done' WHERE type IN ('metrics.probe', 'metrics.dead')`);
    text = await scrape(t);
    assert.equal(sample(text, 'signet_job_queue_depth', { type: 'metrics.probe' }), 0);
    assert.equal(sample(text, 'signet_job_queue_oldest_age_seconds', { type: 'metrics.probe' }), 0);
    assert.equal(sample(text, 'signet_jobs_dead', { type: 'metrics.dead' }), 0);
  });
});

describe('GET /metrics: charges, refunds, webhook deliveries', () => {
  test('counted where they happen; the jobs a request enqueues carry its id into the worker logs', async () => {
    const c = t.customer;
    const register = (url: string) =>
      t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...bearer(c.apiKey), 'content-type': 'application/json' }, payload: JSON.stringify({ url, events: ['envelope.sent'] }) });
    assert.equal((await register(receiver.url('/hook'))).statusCode, 201);
    assert.equal((await register(receiver.url('/gone'))).statusCode, 201);
    const before = await scrape(t);
    const delta = (text: string, name: string, l: Labels) => (sample(text, name, l) ?? 0) - (sample(before, name, l) ?? 0);

    // The create: one charge from the balance; its sending (a job) publishes envelope.sent to each registration.
    await t.container.worker.start();
    const requestId = `metrics-${randomUUID()}`;
    const env = await createEnvelope(t, { title: 'Metrics', recipients: [signer(1)] }, { headers: { 'x-request-id': requestId } });
    let text = await scrape(t);
    assert.equal(delta(text, 'signet_charges_total', { via: 'balance', operation: 'envelope_create' }), 1);

    // Deliveries: /hook fails once (retrying) then succeeds (delivered); /gone is dead at once.
    const wanted = { delivered: 1, retrying: 1, dead: 1 };
    text = await until(t, 'webhook outcomes', (s) => Object.entries(wanted).every(([outcome, n]) => delta(s, 'signet_webhook_deliveries_total', { outcome }) === n));
    // The request id rides from the create into the job it enqueued, and from that job into the deliveries it enqueued.
    const jobs = rowsOf<{ type: string; payload: { requestId?: string } }>(await t.container.db.execute(sql`SELECT type, payload FROM jobs WHERE type IN ('envelope.distribute', 'webhook.deliver') ORDER BY id`));
    assert.deepEqual(jobs.map((j) => [j.type, j.payload.requestId]), [['envelope.distribute', requestId], ['webhook.deliver', requestId], ['webhook.deliver', requestId]]);
    const failed = logLines.filter((l) => l.msg === 'job failed' && l.type === 'webhook.deliver');
    assert.ok(failed.length >= 1, 'the failed attempt is logged');
    for (const line of failed) assert.equal(line.reqId, requestId, 'the worker log line names the request');

    // Cancelled: its charge is refunded by a job.
    const cancel = await t.app.inject({ method: 'DELETE', url: `/v1/envelopes/${env.envelopeId}`, headers: bearer(c.apiKey) });
    assert.equal(cancel.statusCode, 200, cancel.body);
    text = await until(t, 'the refund', (s) => delta(s, 'signet_refunds_total', { kind: 'balance', outcome: 'succeeded' }) === 1);
    assert.equal(delta(text, 'signet_refunds_total', { kind: 'balance', outcome: 'requested' }), 1);
  });
});
