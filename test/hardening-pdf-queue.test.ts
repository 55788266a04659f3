// test-lane: once (opens no database)
/**
 * The queue in front of the PDF workers: bounded in all and per customer (503 with Retry-After at
 * once), fair (a customer flooding it delays only itself), and a job that waited past its deadline
 * is dropped unserved. A stand-in worker that sleeps per job makes the timings deterministic.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, test } from 'node:test';
import { AppError } from '../src/errors.js';
import { SandboxPool } from '../src/pdf/sandbox.js';

const SLOW = new URL('./fixtures/slow-worker.ts', import.meta.url);
const pools: SandboxPool[] = [];
after(() => Promise.all(pools.map((p) => p.close())));

function pool(opts: ConstructorParameters<typeof SandboxPool>[2]) {
  const p = new SandboxPool(SLOW, 64, opts);
  pools.push(p);
  return p;
}

const job = (p: SandboxPool, owner: string, tag: string, ms: number, waitMs = 30_000) => p.run<string>({ ms, tag }, [], 30_000, { owner, waitMs });

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  const err = await promise.then(
    () => assert.fail('expected a refusal'),
    (e: unknown) => e,
  );
  assert.ok(err instanceof AppError, String(err));
  return err;
}

test("one customer's flood of slow uploads delays another customer's upload by one job at most", async () => {
  const p = pool({ size: 2, maxQueuePerOwner: 2 });
  // Warm both workers, so start-up time does not blur the order below.
  await Promise.all([job(p, 'warm1', 'w', 1), job(p, 'warm2', 'w', 1)]);
  const finished: string[] = [];
  const track = (promise: Promise<string>) => promise.then((tag) => void finished.push(tag));

  // Alone, the flooder gets both workers; two more wait, and a fifth upload is refused at once.
  const flood = [0, 1, 2, 3].map((i) => track(job(p, 'flooder', `flood${i}`, 400)));
  const fifth = await refusal(job(p, 'flooder', 'flood4', 400));
  assert.equal(fifth.code, 'SERVICE_UNAVAILABLE');
  assert.equal(fifth.status, 503);
  assert.equal(fifth.headers['Retry-After'], '5');

  // The other customer queues behind the flooder's waiting uploads, but gets the first worker freed.
  const started = Date.now();
  await track(job(p, 'other', 'other', 50));
  assert.ok(Date.now() - started < 800, `the other customer waited ${Date.now() - started} ms`);
  await Promise.all(flood);
  assert.deepEqual(finished.slice(2), ['other', 'flood2', 'flood3'], `finish order: ${finished.join(', ')}`);
});

test('a job that waits past its deadline is dropped with 503, and the queue has a global bound', async () => {
  const p = pool({ size: 1, maxQueue: 2, maxQueuePerOwner: 2 });
  const running = job(p, 'a', 'a', 600);
  const started = Date.now();
  const late = await refusal(job(p, 'b', 'b', 10, 150));
  assert.equal(late.code, 'SERVICE_UNAVAILABLE');
  assert.ok(Date.now() - started < 500, 'refused at its deadline, not when a worker freed up');

  const queued = [job(p, 'c', 'c', 10), job(p, 'd', 'd', 10)];
  assert.equal((await refusal(job(p, 'e', 'e', 10))).code, 'SERVICE_UNAVAILABLE', 'a full queue refuses at once');
  assert.deepEqual(await Promise.all([running, ...queued]), ['a', 'c', 'd']);
});

test('keepWarm starts a worker at once and keeps it past the idle time; others still end when idle, and one that ends is replaced', async () => {
  const idleMs = 100;
  const cold = pool({ size: 2, idleMs });
  await job(cold, 'a', 'a', 1);
  await sleep(idleMs * 3);
  assert.equal(cold.workers, 0, 'without keepWarm an idle pool ends its workers');

  const warm = pool({ size: 2, idleMs });
  warm.keepWarm(1);
  assert.equal(warm.workers, 1, 'started before any job');
  await sleep(idleMs * 3);
  assert.equal(warm.workers, 1, 'kept while idle');
  const both = Promise.all([job(warm, 'a', 'a', 50), job(warm, 'b', 'b', 50)]);
  assert.equal(warm.workers, 2, 'a second job starts a second worker');
  assert.deepEqual(await both, ['a', 'b']);
  await sleep(idleMs * 3);
  assert.equal(warm.workers, 1, 'back to the one kept warm');

  // A worker that ends with its job (here: past maxJobsPerWorker) is replaced at once: the pool stays warm.
  const recycled = pool({ size: 1, idleMs, maxJobsPerWorker: 1 });
  recycled.keepWarm(1);
  assert.equal(await job(recycled, 'a', 'once', 1), 'once');
  assert.equal(recycled.workers, 1);
  assert.equal(await job(recycled, 'a', 'twice', 1), 'twice');
});
