/**
 * `npm run test:cluster` (PostgreSQL only: DATABASE_URL names the server; the test makes a database of
 * its own there for each store and drops it after). Three `signet serve` nodes and two `signet worker` processes
 * behind nginx (deploy/nginx.conf), with shared storage and Redis, take a mixed workload while one node
 * after another is SIGKILLed and started again; after a quiet period every invariant is checked.
 * The script runs this file with plain `node` rather than `node --test`, whose runner kills the file's
 * process at Ctrl-C before it can stop the nodes and drop its database.
 *
 *   CLUSTER_STORAGE       the stores, comma-separated, one cluster each in turn (default s3,postgres):
 *                         s3 (s3rver), postgres (the database's blob tables), local (one DATA_DIR shared by every node)
 *   CLUSTER_SECONDS       seconds of load per store (default 30; longer, up to CLUSTER_MAX_SECONDS, until each role was killed twice)
 *   CLUSTER_MAX_SECONDS   the longest load per store (default 120)
 *   CLUSTER_CLIENTS       concurrent client loops (default 3)
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startReceiver } from '../fixtures/receiver.js';
import { startCluster, storageKinds, type Cluster, type StorageKind } from './cluster.js';
import { checkCreates, checkDocuments, checkMoney, checkQueue, checkWebhooks, pending, type Scope } from './invariants.js';
import type { Node } from './processes.js';
import { createWorkload } from './workload.js';

const SECONDS = Number(process.env.CLUSTER_SECONDS || 30);
const MAX_SECONDS = Math.max(SECONDS, Number(process.env.CLUSTER_MAX_SECONDS || 120));
const STORAGES = storageKinds(['s3', 'postgres']);
const CLIENTS = Number(process.env.CLUSTER_CLIENTS || 3);
const SETTLE_MS = 120_000;
const OPENING_CENTS = 100_000;

/** Short leases and schedules, so work a killed node held is taken over within the test's minute. */
const ENV = {
  IDEMPOTENCY_LEASE_MS: '3000',
  JOB_LEASE_MS: '5000',
  SCHEDULER_INTERVAL_MS: '500',
  WEBHOOK_RETRY_SCHEDULE: '1s,2s,5s,10s,30s',
};

type Kills = { serve: number; worker: number; restartMs: number[] };

/**
 * Every 2-4 s a node is SIGKILLed (a serve node and a worker in turn) and started again in the
 * background; one node of each role always stays up. However slowly a node restarts on a busy
 * machine, the kills keep coming. Resolves once every node is back up.
 */
async function chaos(c: Cluster, busy: { serve: () => Promise<boolean>; worker: () => Promise<boolean> }, running: () => boolean, kills: Kills): Promise<void> {
  const down = new Set<Node>();
  const restarts: Promise<void>[] = [];
  for (let turn = 0; ; turn++) {
    const wait = Date.now() + 2_000 + Math.random() * 2_000;
    while (running() && Date.now() < wait) await sleep(100);
    if (!running()) break;
    const role = turn % 2 === 0 ? c.serves : c.workers;
    const up = role.filter((n) => !down.has(n));
    if (up.length < 2) continue;
    // Aim at work in progress (a create in flight, a job running), waiting 2 s at most for some.
    const aim = Date.now() + 2_000;
    while (Date.now() < aim && !(await busy[role[0].role]())) await sleep(20);
    await sleep(Math.random() * 300);
    const victim = up[Math.floor(Math.random() * up.length)];
    down.add(victim);
    await victim.kill('SIGKILL');
    kills[victim.role]++;
    restarts.push(
      sleep(200 + Math.random() * 800)
        .then(async () => {
          const t0 = Date.now();
          await victim.start();
          kills.restartMs.push(Date.now() - t0);
        })
        .finally(() => down.delete(victim)),
    );
  }
  await Promise.all(restarts);
}

async function json<T>(res: Response, status: number, what: string): Promise<T> {
  const text = await res.text();
  assert.equal(res.status, status, `${what}: ${text}`);
  return JSON.parse(text) as T;
}

for (const storage of STORAGES) {
  test(`three serve nodes and two workers behind nginx, on ${storage} storage, lose nothing while nodes are SIGKILLed`, { timeout: 15 * 60_000 }, () => run(storage));
}

async function run(storage: StorageKind): Promise<void> {
  const started = Date.now();
  const cluster = await startCluster({ serveNodes: 3, workers: 2, env: ENV, storage });
  const receiver = await startReceiver().catch(async (err) => {
    await cluster.close();
    throw err;
  });
  const startSeconds = (Date.now() - started) / 1000;
  try {
    const customer = await json<{ customerId: string; apiKey: string }>(
      await fetch(`${cluster.url}/ops/customers`, {
        method: 'POST',
        headers: { authorization: `Bearer ${cluster.opsToken}`, 'content-type': 'application/json' },
        body: JSON.stringify({ email: 'cluster@example.com', name: 'Cluster', creditCents: OPENING_CENTS }),
      }),
      201,
      'POST /ops/customers',
    );
    const webhook = await json<{ id: string; secret: string }>(
      await fetch(`${cluster.url}/v1/webhooks`, {
        method: 'POST',
        headers: { authorization: `Bearer ${customer.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ url: receiver.url(), events: ['*'] }),
      }),
      201,
      'POST /v1/webhooks',
    );
    const scope: Scope = { pool: cluster.pool, customerId: customer.customerId, webhookId: webhook.id, webhookSecret: webhook.secret, initialMicros: BigInt(OPENING_CENTS) * 10_000n };

    const workload = createWorkload({ url: cluster.url, apiKey: customer.apiKey });
    const kills: Kills = { serve: 0, worker: 0, restartMs: [] };
    // SECONDS of load, longer (up to MAX_SECONDS) until each role was killed twice: on a busy machine
    // a node takes long to start again, and a run with one kill proves little.
    const loadFrom = Date.now();
    const running = () => {
      const elapsed = (Date.now() - loadFrom) / 1000;
      return elapsed < SECONDS || ((kills.serve < 2 || kills.worker < 2) && elapsed < MAX_SECONDS);
    };
    const loadAverage = os.loadavg()[0];
    const busy = {
      serve: async () => workload.inFlight.creates > 0,
      worker: async () => Number((await cluster.pool.query(`SELECT count(*) AS n FROM jobs WHERE status = 'running'`)).rows[0].n) > 0,
    };
    // Each settles before the other is looked at, so a failing workload still leaves every node up.
    const [load, kill] = await Promise.allSettled([workload.run(CLIENTS, () => !running()), chaos(cluster, busy, running, kills)]);
    if (kill.status === 'rejected') throw new Error(`the kill loop failed: ${(kill.reason as Error).message}`);
    if (load.status === 'rejected') throw new Error(`the workload failed: ${(load.reason as Error).message}\n${cluster.logs()}`);

    const loadDone = Date.now();
    const quietFrom = Date.now();
    let left: string[] = [];
    while (Date.now() - quietFrom < SETTLE_MS) {
      left = await pending(scope, workload.acknowledged, receiver.requests);
      if (!left.length) break;
      await sleep(500);
    }
    const quietSeconds = (Date.now() - quietFrom) / 1000;

    const acks = workload.acknowledged;
    const docs = await checkDocuments(cluster.serves, customer.apiKey, acks);
    const hooks = await checkWebhooks(scope, receiver.requests);
    const violations = [
      ...left.map((l) => `still pending after ${SETTLE_MS / 1000} s: ${l}`),
      ...(await checkCreates(scope, acks)),
      ...docs.violations,
      ...(await checkMoney(scope, acks)),
      ...hooks.violations,
      ...(await checkQueue(cluster.pool)),
      ...cluster.nodes.flatMap((n) => n.crashes),
    ];

    const nginxLog = readFileSync(cluster.nginxErrorLog, 'utf8');
    const cut = (nginxLog.match(/prematurely closed connection|reset by peer/g) ?? []).length;
    const refused = (nginxLog.match(/connect\(\) failed/g) ?? []).length;
    const [jobs] = (await cluster.pool.query(`SELECT count(*) FILTER (WHERE attempts > 1) AS again, count(*) AS n FROM jobs`)).rows as { again: string; n: string }[];
    const s = workload.stats;
    const summary = [
      `cluster: 3 serve nodes + 2 workers behind nginx (deploy/nginx.conf), storage ${cluster.storage}, Redis; up in ${startSeconds.toFixed(0)} s; ${((loadDone - loadFrom) / 1000).toFixed(0)} s of load from ${CLIENTS} clients (load average ${loadAverage.toFixed(1)} at the start)`,
      `cluster: ${s.creates} creates acknowledged (${s.retriedCreates} after a retry, ${s.replayed} replayed), ${s.signings} signings, ${s.rejections} rejections, ${s.cancellations} cancellations; ${s.retries} requests sent again, ${s.alreadyActed} found done (ALREADY_ACTED)`,
      `cluster: ${kills.serve + kills.worker} SIGKILLs (${kills.serve} serve, ${kills.worker} worker), each restarted (in ${(Math.max(0, ...kills.restartMs) / 1000).toFixed(1)} s at most); nginx saw ${cut} answers cut off and ${refused} connections refused; ${jobs.again} of ${jobs.n} jobs ran more than once; quiet after ${quietSeconds.toFixed(1)} s`,
      `cluster: ${hooks.events} events, ${hooks.deliveries} deliveries, ${receiver.requests.length} received (${hooks.repeats} repeated); ${docs.reads} documents read from the nodes directly; ${((Date.now() - started) / 1000).toFixed(0)} s in all`,
      `cluster: ${violations.length ? `${violations.length} invariant violation(s)` : 'every invariant holds'}`,
    ];
    console.log(summary.join('\n'));

    assert.ok(kills.serve >= 1 && kills.worker >= 1, `too few kills to prove anything: ${JSON.stringify(kills)} (raise CLUSTER_SECONDS)`);
    assert.ok(acks.some((a) => a.fate === 'complete') && acks.some((a) => a.fate === 'reject') && acks.some((a) => a.fate === 'cancel'), 'every fate ran at least once');
    assert.deepEqual(violations, [], `${violations.slice(0, 50).join('\n')}\n${cluster.logs()}`);
  } finally {
    await receiver.close();
    await cluster.close();
  }
}
