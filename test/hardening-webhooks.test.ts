/**
 * Webhook hardening: a registration's DNS lookup holds no database transaction (other requests go on
 * while it resolves), and a DELETE racing a delivery's outcome takes the rows in the same order as the
 * delivery job (no deadlock, no 500, no second POST).
 */
import assert from 'node:assert/strict';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { openDatabase, rowsOf } from '../src/db/client.js';
import type { ResolvedAddress, Resolver } from '../src/providers/webhooks/url-policy.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { startReceiver, type Receiver } from './fixtures/receiver.js';

const onPostgres = Boolean(process.env.DATABASE_URL);
const json = { 'content-type': 'application/json' };
const apps: TestApp[] = [];
const receivers: Receiver[] = [];
after(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await Promise.all(receivers.map((r) => r.close()));
});

/** A gate the test opens: `wait()` resolves once `open()` is called. */
function gate() {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { open, wait: () => opened };
}

const within = <T>(p: Promise<T>, ms: number, what: string) =>
  Promise.race([p, sleep(ms).then(() => Promise.reject(new Error(`${what} did not finish within ${ms} ms`)))]);

describe('registration DNS runs before the transaction', () => {
  test('while a registration waits on a slow resolver, other requests of the same app are answered', async () => {
    const slow = gate();
    let asked = 0;
    const resolver: Resolver = async (host): Promise<ResolvedAddress[]> => {
      if (host === 'slow.example.com') {
        asked++;
        await slow.wait();
      }
      return [{ address: '93.184.216.34', family: 4 }];
    };
    // On PostgreSQL a pool of one connection stands for an exhausted pool: a transaction held across
    // the lookup would leave nothing for anyone else, as PGlite's single connection does.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-hardening-'));
    const database = onPostgres
      ? await openDatabase({ databaseUrl: process.env.DATABASE_URL!, dataDir, poolSize: 1, schemaName: `t_${randomBytes(6).toString('hex')}` })
      : undefined;
    const t = await createTestApp({ overrides: { webhookResolver: resolver, ...(database ? { database } : {}) } });
    apps.push(t);
    const headers = { ...bearer(t.customer.apiKey), ...json };

    const created = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers, payload: JSON.stringify({ url: 'https://fast.example.com/hook', events: ['*'] }) });
    assert.equal(created.statusCode, 201, created.body);
    const id = created.json().id as string;

    const registering = t.app.inject({ method: 'POST', url: '/v1/webhooks', headers, payload: JSON.stringify({ url: 'https://slow.example.com/hook', events: ['*'] }) });
    const updating = t.app.inject({ method: 'PUT', url: `/v1/webhooks/${id}`, headers, payload: JSON.stringify({ url: 'https://slow.example.com/other' }) });
    while (asked < 1) await sleep(10);

    // Both lookups are still pending: reads and another mutation must not wait for them.
    const listed = await within(t.app.inject({ url: '/v1/webhooks', headers: bearer(t.customer.apiKey) }), 2_000, 'GET /v1/webhooks');
    assert.equal(listed.statusCode, 200, listed.body);
    const other = await within(
      t.app.inject({ method: 'POST', url: '/v1/webhooks', headers, payload: JSON.stringify({ url: 'https://fast.example.com/second', events: ['*'] }) }),
      2_000,
      'another registration',
    );
    assert.equal(other.statusCode, 201, other.body);

    while (asked < 2) await sleep(10);
    slow.open();
    const [reg, upd] = await Promise.all([registering, updating]);
    assert.equal(reg.statusCode, 201, reg.body);
    assert.equal(reg.json().url, 'https://slow.example.com/hook');
    assert.equal(upd.statusCode, 200, upd.body);
    assert.equal(upd.json().url, 'https://slow.example.com/other');
  });

  test('a refused URL on PUT is still refused (checked before the lock, not skipped)', async () => {
    const resolver: Resolver = async () => [{ address: '10.0.0.5', family: 4 }];
    const t = await createTestApp({ overrides: { webhookResolver: resolver } });
    apps.push(t);
    const headers = { ...bearer(t.customer.apiKey), ...json };
    const bad = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers, payload: JSON.stringify({ url: 'https://private.example.com/hook', events: ['*'] }) });
    assert.equal(bad.statusCode, 400, bad.body);
    assert.equal(bad.json().code, 'INVALID_WEBHOOK_URL');
  });
});

describe('DELETE racing a delivery outcome', () => {
  test('one lock order: no deadlock, DELETE answers 204, the receiver gets one POST', { skip: !onPostgres && 'needs concurrent connections (PostgreSQL)' }, async () => {
    const answer = gate();
    const r = await startReceiver({ handler: async () => (await answer.wait(), 500) });
    receivers.push(r);
    const t = await createTestApp({ env: { WEBHOOK_ALLOW_HOSTS: '127.0.0.1', SCHEDULER_INTERVAL_MS: '60000' } });
    apps.push(t);
    const { db } = t.container;
    const created = await t.app.inject({ method: 'POST', url: '/v1/webhooks', headers: { ...bearer(t.customer.apiKey), ...json }, payload: JSON.stringify({ url: r.url(), events: ['*'] }) });
    assert.equal(created.statusCode, 201, created.body);
    const webhookId = created.json().id as string;

    await db.transaction((tx) =>
      t.container.webhooks.fanOut(tx, {
        owner: { customerId: t.customer.id, mode: 'live' },
        envelopeId: randomUUID(),
        eventId: null,
        event: 'envelope.sent',
        occurredAt: new Date(),
        payload: async () => ({ envelope: { status: 'SENT' }, recipient: null }),
      }),
    );
    const [delivery] = rowsOf<{ id: string }>(await db.execute(sql`SELECT id FROM webhook_deliveries WHERE webhook_id = ${webhookId}`));
    await t.container.worker.start();
    await r.waitFor(1, 10_000);

    // A blocker holds the delivery row; the job (answered 500) queues on it, then the DELETE.
    const release = gate();
    let blockerPid = 0;
    const blocker = db.transaction(async (tx) => {
      await tx.execute(sql`SELECT id FROM webhook_deliveries WHERE id = ${delivery.id} FOR UPDATE`);
      blockerPid = Number(rowsOf<{ pid: number }>(await tx.execute(sql`SELECT pg_backend_pid() AS pid`))[0].pid);
      await release.wait();
    });
    while (!blockerPid) await sleep(5);
    const waitingOn = async (pid: number) =>
      Number(rowsOf<{ n: string }>(await db.execute(sql`SELECT count(*) AS n FROM pg_stat_activity WHERE ${pid} = ANY(pg_blocking_pids(pid))`))[0].n);
    const blockedCount = async (n: number) => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(10)) if ((await waitingOn(blockerPid)) + (await waitingOnAny()) >= n) return;
      throw new Error(`never saw ${n} blocked sessions`);
    };
    // Sessions waiting on anything held by the blocker or by sessions waiting on it.
    const waitingOnAny = async () =>
      Number(
        rowsOf<{ n: string }>(
          await db.execute(sql`SELECT count(*) AS n FROM pg_stat_activity a WHERE NOT (${blockerPid} = ANY(pg_blocking_pids(a.pid))) AND EXISTS (
            SELECT 1 FROM pg_stat_activity b WHERE ${blockerPid} = ANY(pg_blocking_pids(b.pid)) AND b.pid = ANY(pg_blocking_pids(a.pid)))`),
        )[0].n,
      );
    answer.open();
    await blockedCount(1);
    const deleting = t.app.inject({ method: 'DELETE', url: `/v1/webhooks/${webhookId}`, headers: bearer(t.customer.apiKey) });
    await blockedCount(2);
    release.open();
    await blocker;

    const res = await deleting;
    assert.equal(res.statusCode, 204, res.body);
    // The 500 was recorded (one attempt), then the DELETE ended the delivery.
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(20)) {
      const [job] = rowsOf<{ status: string }>(await db.execute(sql`SELECT status FROM jobs WHERE type = 'webhook.deliver'`));
      if (job.status !== 'running') break;
    }
    const [d] = rowsOf<{ status: string; attempts: number; response_code: number | null }>(
      await db.execute(sql`SELECT status, attempts, response_code FROM webhook_deliveries WHERE id = ${delivery.id}`),
    );
    assert.deepEqual({ ...d, attempts: Number(d.attempts) }, { status: 'FAILED', attempts: 1, response_code: 500 });
    const [job] = rowsOf<{ last_error: string | null }>(await db.execute(sql`SELECT last_error FROM jobs WHERE type = 'webhook.deliver'`));
    assert.doesNotMatch(job.last_error ?? '', /deadlock/i);
    // Its retry, made due now, finds the delivery ended and sends nothing.
    await db.execute(sql`UPDATE jobs SET run_at = now() WHERE type = 'webhook.deliver' AND status = 'queued'`);
    for (const deadline = Date.now() + 10_000; Date.now() < deadline; await sleep(20)) {
      t.container.worker.wake();
      const [j] = rowsOf<{ status: string }>(await db.execute(sql`SELECT status FROM jobs WHERE type = 'webhook.deliver'`));
      if (j.status === 'done') break;
    }
    assert.equal(r.requests.length, 1, 'the receiver got the delivery once');
  });
});
