import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { createLocalStorage } from '../src/providers/storage/index.js';
import { assertSameRuntime } from './fixtures/runtime.js';
import { OPS_TOKEN, createTestApp, seedPgliteDataDir, type TestApp } from './harness.js';
import { RUN_TS } from './fixtures/run-ts.js';

const ROOT = path.resolve(import.meta.dirname, '..');
const VERSION: string = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version;
const apps: TestApp[] = [];
after(async () => {
  for (const a of apps) await a.close();
});

async function app(opts: Parameters<typeof createTestApp>[0] = {}): Promise<TestApp> {
  const a = await createTestApp(opts);
  apps.push(a);
  return a;
}

/** A local store whose check fails as `check` does. */
function storageWithCheck(check: () => Promise<void>) {
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-health-blobs-'));
  return { ...createLocalStorage(dir), check };
}

describe('GET /health: storage', () => {
  test('a store whose check fails: 503 naming storage, the database still ok', async () => {
    const t = await app({ overrides: { storage: storageWithCheck(async () => Promise.reject(new Error('bucket unreachable'))) } });
    const res = await t.app.inject({ url: '/health' });
    assert.equal(res.statusCode, 503, res.body);
    assert.deepEqual(res.json(), {
      status: 'unavailable',
      version: VERSION,
      engine: { name: 'local' },
      checks: { database: 'ok', storage: 'failed' },
      code: 'SERVICE_UNAVAILABLE',
      error: 'The document storage is unreachable',
    });
  });

  test('a store that does not answer fails within the check timeout', async () => {
    const t = await app({ overrides: { storage: storageWithCheck(() => new Promise(() => {})) } });
    const started = Date.now();
    const res = await t.app.inject({ url: '/health' });
    assert.equal(res.statusCode, 503, res.body);
    assert.equal(res.json().checks.storage, 'failed');
    assert.ok(Date.now() - started < 5_000, `answered after ${Date.now() - started} ms`);
  });

  test('the local store: a blobs path that is not a usable directory fails the check (once the last outcome is a few seconds old)', async () => {
    const t = await app();
    assert.equal((await t.app.inject({ url: '/health' })).statusCode, 200);
    const blobs = path.join(t.config.dataDir, 'blobs');
    rmSync(blobs, { recursive: true, force: true });
    writeFileSync(blobs, 'not a directory');
    const res = await eventually(t, 503);
    assert.deepEqual(res.json().checks, { database: 'ok', storage: 'failed' });
  });

  test('the storage check runs once per few seconds however often /health is called, and a recovered store is seen again', async () => {
    let checks = 0;
    let failing = true;
    const t = await app({
      overrides: {
        storage: storageWithCheck(async () => {
          checks++;
          if (failing) throw new Error('bucket unreachable');
        }),
      },
    });
    // Anyone may call /health: a flood of them, side by side and one after another, costs one call to the store.
    const burst = await Promise.all(Array.from({ length: 20 }, () => t.app.inject({ url: '/health' })));
    for (let i = 0; i < 20; i++) assert.equal((await t.app.inject({ url: '/health' })).statusCode, 503);
    assert.ok(burst.every((r) => r.statusCode === 503 && r.json().checks.storage === 'failed'));
    assert.equal(checks, 1);

    failing = false;
    const res = await eventually(t, 200);
    assert.equal(res.json().checks.storage, 'ok');
    assert.ok(checks >= 2 && checks <= 10, `${checks} checks`);
  });
});

/** /health until it answers `status`: a store's outcome answers it for a few seconds. The bound is liveness only. */
async function eventually(t: TestApp, status: number) {
  for (const deadline = Date.now() + 30_000; ; await sleep(250)) {
    const res = await t.app.inject({ url: '/health' });
    if (res.statusCode === status) return res;
    if (Date.now() > deadline) throw new Error(`/health still answers ${res.statusCode}: ${res.body}`);
  }
}

describe('GET /health/ready', () => {
  test('200 until the node drains, then 503 {ready:false} while everything else is still served', async () => {
    const t = await app();
    const ready = await t.app.inject({ url: '/health/ready' });
    assert.equal(ready.statusCode, 200, ready.body);
    assert.deepEqual(ready.json(), { ready: true });
    t.app.startDraining();
    const draining = await t.app.inject({ url: '/health/ready' });
    assert.equal(draining.statusCode, 503, draining.body);
    assert.deepEqual(draining.json(), { ready: false });
    const health = await t.app.inject({ url: '/health' });
    assert.equal(health.statusCode, 200, health.body);
    // Keep-alive clients are told to let go of this node.
    assert.equal(health.headers.connection, 'close');
  });
});

type Answer = { status: number; body: string };
const read = (res: IncomingMessage) =>
  new Promise<Answer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    res.on('error', reject);
  });

/** One request on a fresh connection; rejects when the connection is refused. */
function get(port: number, url: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path: url, agent: false }, (res) => read(res).then(resolve, reject));
    req.on('error', reject);
    req.end();
  });
}

// The server runs on PGlite in DATA_DIR whatever the suite runs on, so the PostgreSQL lane need not repeat it.
describe('SIGTERM on `signet serve`', { skip: Boolean(process.env.DATABASE_URL) && 'runs on PGlite whatever the store: the PGlite lane runs it' }, () => {
  test('ready turns 503 at once, requests are served through the drain, the one in flight completes, then exit 0', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-drain-'));
    await seedPgliteDataDir(dataDir);
    const env: NodeJS.ProcessEnv = { ...process.env };
    delete env.NODE_TEST_CONTEXT;
    // PGlite in DATA_DIR whatever the suite runs on: the shutdown is the subject, and a real server process
    // must not write into the shared PostgreSQL's public schema.
    delete env.DATABASE_URL;
    Object.assign(env, { DATA_DIR: dataDir, PORT: '0', HOST: '127.0.0.1', OPS_TOKEN, JWT_SECRET: 'j'.repeat(64), LOG_LEVEL: 'warn', SHUTDOWN_DRAIN_MS: '1500' });
    const proc = spawn(process.execPath, [...RUN_TS, 'src/cli.ts', 'serve'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
    try {
      const port = await new Promise<number>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`serve did not start:\n${output.join('\n')}`)), 60_000);
        createInterface({ input: proc.stderr! }).on('line', (line) => output.push(`[stderr] ${line}`));
        createInterface({ input: proc.stdout! }).on('line', (line) => {
          output.push(line);
          const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
          if (m) (clearTimeout(timer), resolve(Number(m[1])));
        });
      });
      assertSameRuntime(output.join('\n'), '`signet serve`');
      assert.equal((await get(port, '/health/ready')).status, 200);

      // A request in flight: its headers are in, half its body is sent, the rest comes after the drain.
      const body = JSON.stringify({ email: 'drain@example.com', name: 'Drain' });
      let answered: Answer | undefined;
      let finish = () => {};
      const slow = new Promise<Answer>((resolve, reject) => {
        const req = httpRequest(
          { host: '127.0.0.1', port, method: 'POST', path: '/ops/customers', agent: false, headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } },
          (res) => read(res).then((a) => resolve((answered = a))),
        );
        req.on('error', reject);
        req.write(body.slice(0, 10));
        finish = () => req.end(body.slice(10));
      });
      await sleep(300);

      const signalled = Date.now();
      proc.kill('SIGTERM');
      let ready: Answer;
      for (;;) {
        ready = await get(port, '/health/ready');
        if (ready.status === 503 || Date.now() - signalled > 5_000) break;
        await sleep(50);
      }
      assert.equal(ready.status, 503, ready.body);
      assert.deepEqual(JSON.parse(ready.body), { ready: false });
      assert.ok(Date.now() - signalled < 1_000, 'not ready at once');
      // Still serving new requests while the load balancer notices.
      assert.equal((await get(port, '/health')).status, 200);

      // After the drain period the server closes: no new connection is taken; the process waits for the one in flight.
      for (;;) {
        const refused = await get(port, '/health').then(() => false, (err: NodeJS.ErrnoException) => err.code === 'ECONNREFUSED');
        if (refused) break;
        assert.ok(Date.now() - signalled < 15_000, 'the server never closed');
        await sleep(50);
      }
      assert.ok(Date.now() - signalled >= 1_400, `closed after ${Date.now() - signalled} ms, before the drain period`);
      assert.equal(proc.exitCode, null, 'exited with a request in flight');
      assert.equal(answered, undefined);

      finish();
      const res = await slow;
      assert.equal(res.status, 201, res.body);
      assert.ok(JSON.parse(res.body).customerId);
      assert.equal(await exited, 0, output.join('\n'));
    } finally {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGKILL');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
