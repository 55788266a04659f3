/**
 * No node-local state: two nodes (two apps, each with its own container) on one database and one
 * Redis share the rate limit and the failed-authentication limit, fall back to counting alone while
 * Redis does not answer (unreachable, or connected and hung), and run a periodic task once per
 * interval between them.
 *
 * Real peers: Redis at 127.0.0.1:6379 (each run under a key prefix of its own), a redis-server of the
 * test's own for the hang (paused with SIGSTOP, so its connections stay open), and PostgreSQL when
 * DATABASE_URL is set (two pools on one schema, as two processes would be); on PGlite both nodes
 * share the one in-process database.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { openDatabase, type Database } from '../src/db/client.js';
import type { PeriodicTask } from '../src/jobs/worker.js';
import { closeRedis, openRedis } from '../src/providers/redis/redis.js';
import { OPS_TOKEN, bearer, createTestApp, type TestApp, type TestAppOptions } from './harness.js';

const REDIS_URL = 'redis://127.0.0.1:6379';
const PREFIX = `signet-test:${randomBytes(6).toString('hex')}:`;

const unknownKey = () => `svc_live_${randomBytes(16).toString('hex')}`;

after(async () => {
  // Leave nothing behind in the shared Redis.
  const redis = new Redis(REDIS_URL);
  try {
    const keys = await redis.keys(`${PREFIX}*`);
    if (keys.length) await redis.del(...keys);
  } finally {
    await redis.quit();
  }
});

type Nodes = { a: TestApp; b: TestApp; close(): Promise<void> };

/** Two nodes on one database: on PostgreSQL two pools on one schema, on PGlite the one instance. */
async function twoNodes(opts: { env: Record<string, string>; periodic?: (node: 'A' | 'B') => PeriodicTask[] }): Promise<Nodes> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-scale-'));
  const url = process.env.DATABASE_URL;
  let dbA: Database;
  let dbB: Database;
  if (url) {
    const schemaName = `t_${randomBytes(6).toString('hex')}`;
    dbA = await openDatabase({ databaseUrl: url, dataDir, poolSize: 5, schemaName });
    // The schema is dropped once, by A, after B has closed.
    dbB = { ...(await openDatabase({ databaseUrl: url, dataDir, poolSize: 5, schemaName })), dropSchema: undefined };
  } else {
    dbA = await openDatabase({ dataDir: 'memory://' });
    dbB = { ...dbA, close: async () => {} };
  }
  const node = (database: Database, name: 'A' | 'B'): TestAppOptions => ({ env: opts.env, overrides: { database, periodic: opts.periodic?.(name) } });
  const a = await createTestApp(node(dbA, 'A'));
  const b = await createTestApp(node(dbB, 'B'));
  return {
    a,
    b,
    async close() {
      await b.close();
      await a.close();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

const account = (t: TestApp, key: string, ip = '198.51.100.7') => t.app.inject({ url: '/v1/account', headers: bearer(key), remoteAddress: ip });

function assertLimited(res: { statusCode: number; body: string; json(): { code: string } }) {
  assert.equal(res.statusCode, 429, res.body);
  assert.equal(res.json().code, 'RATE_LIMITED');
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A TCP relay to Redis that the test can cut, as a network partition would. */
async function redisRelay(port = 0) {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(6379, '127.0.0.1');
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
      s.on('error', () => {});
    }
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    async cut(): Promise<void> {
      const closed = new Promise((resolve) => server.close(resolve));
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

describe('rate limits shared through Redis', () => {
  test('requests to two nodes count against one budget: the 429 comes from the other node', async () => {
    const nodes = await twoNodes({ env: { REDIS_URL, REDIS_KEY_PREFIX: `${PREFIX}rl1:`, RATE_LIMIT_MAX: '5' } });
    try {
      const { a, b } = nodes;
      const key = a.customer.apiKey;
      for (let i = 0; i < 3; i++) assert.equal((await account(a, key)).statusCode, 200);
      const fourth = await account(b, key);
      assert.equal(fourth.statusCode, 200);
      assert.equal(fourth.headers['ratelimit-remaining'], '1', 'B counts the three requests A served');
      assert.equal((await account(b, key)).statusCode, 200);
      assertLimited(await account(b, key));
      assertLimited(await account(a, key));
      // Another customer has a budget of its own.
      const other = await a.createCustomer();
      assert.equal((await account(b, other.apiKey)).statusCode, 200);
    } finally {
      await nodes.close();
    }
  });

  test('refused credentials on either node count toward one failed-authentication limit', async () => {
    const nodes = await twoNodes({ env: { REDIS_URL, REDIS_KEY_PREFIX: `${PREFIX}af1:`, AUTH_FAILURE_LIMIT: '3' } });
    try {
      const { a, b } = nodes;
      const ip = '198.51.100.20';
      assert.equal((await account(a, unknownKey(), ip)).statusCode, 401);
      assert.equal((await account(b, unknownKey(), ip)).statusCode, 401);
      assert.equal((await account(a, unknownKey(), ip)).statusCode, 401);
      // Over the limit on both nodes, even with a valid key; another address is not.
      const limited = await account(b, a.customer.apiKey, ip);
      assertLimited(limited);
      assert.ok(Number(limited.headers['retry-after']) >= 1 && Number(limited.headers['retry-after']) <= 60, String(limited.headers['retry-after']));
      assertLimited(await account(a, a.customer.apiKey, ip));
      assert.equal((await account(b, a.customer.apiKey, '198.51.100.21')).statusCode, 200);
    } finally {
      await nodes.close();
    }
  });
});

describe('Redis unreachable: each node counts on its own (neither open nor closed)', () => {
  test('down at start: the start is not held up, requests are served, and the limits hold per node', async () => {
    const port = await closedPort();
    // The connection gives up its first attempt at once (a host that drops packets: after 1 s) and goes on trying.
    const started = Date.now();
    const probe = await openRedis({ url: `redis://127.0.0.1:${port}`, keyPrefix: PREFIX, log: { info() {}, warn() {} } });
    assert.ok(Date.now() - started < 2_000, `openRedis took ${Date.now() - started} ms`);
    assert.equal(probe.shared(), false);
    await closeRedis(probe);

    const nodes = await twoNodes({ env: { REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_KEY_PREFIX: `${PREFIX}down:`, RATE_LIMIT_MAX: '3', AUTH_FAILURE_LIMIT: '2' } });
    try {
      const { a, b } = nodes;
      const key = a.customer.apiKey;
      for (let i = 0; i < 3; i++) assert.equal((await account(a, key)).statusCode, 200);
      assertLimited(await account(a, key));
      // B has counted nothing: the budget is per node while Redis is away.
      assert.equal((await account(b, key)).statusCode, 200);

      const ip = '198.51.100.30';
      for (let i = 0; i < 2; i++) assert.equal((await account(a, unknownKey(), ip)).statusCode, 401);
      assertLimited(await account(a, unknownKey(), ip));
      assert.equal((await account(b, unknownKey(), ip)).statusCode, 401, 'B has its own count');
    } finally {
      await nodes.close();
    }
  });

  test('lost after start: the nodes count alone, and share again once Redis answers', async () => {
    const relay = await redisRelay();
    const prefix = `${PREFIX}lost:`;
    const nodes = await twoNodes({ env: { REDIS_URL: `redis://127.0.0.1:${relay.port}`, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_MAX: '4' } });
    const direct = new Redis(REDIS_URL);
    let restored: Awaited<ReturnType<typeof redisRelay>> | undefined;
    try {
      const { a, b } = nodes;
      const key = a.customer.apiKey;
      for (let i = 0; i < 2; i++) assert.equal((await account(a, key)).statusCode, 200);
      for (let i = 0; i < 2; i++) assert.equal((await account(b, key)).statusCode, 200);
      assertLimited(await account(b, key));

      await relay.cut();
      // A's own count starts from nothing: served, up to the limit, then refused by A alone.
      for (let i = 0; i < 4; i++) assert.equal((await account(a, key)).statusCode, 200, `request ${i + 1} while Redis is away`);
      assertLimited(await account(a, key));

      // Redis back (the relay on the same port): B's calls are counted in Redis again.
      restored = await redisRelay(relay.port);
      const other = await a.createCustomer();
      const sharedKey = `${prefix}rl:customer:${other.id}`;
      for (const deadline = Date.now() + 10_000; !(await direct.exists(sharedKey)); await sleep(100)) {
        if (Date.now() > deadline) throw new Error('the node did not count in Redis again');
        assert.equal((await account(b, other.apiKey)).statusCode, 200);
      }
    } finally {
      await nodes.close();
      await restored?.cut();
      await direct.quit();
    }
  });
});

/** A redis-server of this test's own (it is paused and resumed), on a free port, in a temporary directory. */
async function privateRedis() {
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-redis-'));
  const port = await closedPort();
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise((resolve) => server.once('exit', resolve));
  const stop = async () => {
    server.kill('SIGCONT');
    server.kill('SIGKILL');
    await exited;
    rmSync(dir, { recursive: true, force: true });
  };
  let client: Redis | undefined;
  for (const deadline = Date.now() + 10_000; !client; await sleep(50)) {
    const attempt = new Redis({ port, lazyConnect: true, retryStrategy: () => null });
    attempt.on('error', () => {});
    if (await attempt.connect().then(() => attempt.ping(), () => undefined)) client = attempt;
    else attempt.disconnect();
    if (!client && (server.exitCode !== null || Date.now() > deadline)) {
      await stop();
      throw new Error(`redis-server did not start on ${port}`);
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    client,
    /** SIGSTOP: the connections stay open and nothing answers, as a server stuck in a long command or swapping. */
    pause: () => void server.kill('SIGSTOP'),
    resume: () => void server.kill('SIGCONT'),
    async close() {
      client.disconnect();
      await stop();
    },
  };
}

describe('Redis connected but not answering', () => {
  test('after a few unanswered commands the node counts alone, without waiting on Redis, warns once, shows it in /metrics, and shares again once Redis answers', async () => {
    const redis = await privateRedis();
    const logged: { level: number; msg: string }[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void logged.push(JSON.parse(line)) });
    const a = await createTestApp({ env: { REDIS_URL: redis.url, REDIS_KEY_PREFIX: `${PREFIX}hung:`, RATE_LIMIT_MAX: '15' }, overrides: { logger } });
    try {
      const key = a.customer.apiKey;
      const counted = `${PREFIX}hung:rl:customer:${a.customer.id}`;
      assert.equal((await account(a, key)).statusCode, 200);
      assert.equal(await redis.client.get(counted), '1', 'counted in Redis while it answers');

      redis.pause();
      // Each request asks Redis twice (the failed-authentication check, then the rate limit). Ten
      // requests that each waited out a command timeout twice would take seconds; these wait on it a
      // few times in all. The bound is generous: it only tells "waited on Redis every time" from "not".
      const started = Date.now();
      for (let i = 0; i < 10; i++) assert.equal((await account(a, key)).statusCode, 200, `request ${i + 1} while Redis hangs`);
      const tookMs = Date.now() - started;
      assert.ok(tookMs < 4_000, `10 requests took ${tookMs} ms while Redis hung`);
      // The limit still holds, counted by this node alone from the moment Redis stopped answering (a
      // command that timed out on a busy machine may have been counted in both places: no exact count).
      let refused: Awaited<ReturnType<typeof account>> | undefined;
      for (let i = 0; i < 15 && !refused; i++) {
        const res = await account(a, key);
        if (res.statusCode !== 200) refused = res;
      }
      assert.ok(refused, 'limited by the local count');
      assertLimited(refused);

      const metrics = await a.app.inject({ url: '/metrics', headers: bearer(OPS_TOKEN) });
      assert.match(metrics.body, /^signet_redis_shared 0$/m);
      const unanswered = Number(/^signet_redis_unanswered_total (\d+)$/m.exec(metrics.body)?.[1]);
      assert.ok(unanswered >= 3 && unanswered < 10, `${unanswered} commands went unanswered`);
      const warnings = logged.filter((l) => /does not answer/.test(l.msg));
      assert.equal(warnings.length, 1, JSON.stringify(logged));

      redis.resume();
      const other = await a.createCustomer();
      const sharedKey = `${PREFIX}hung:rl:customer:${other.id}`;
      for (const deadline = Date.now() + 10_000; !(await redis.client.exists(sharedKey)); await sleep(100)) {
        if (Date.now() > deadline) throw new Error('the node did not count in Redis again');
        assert.equal((await account(a, other.apiKey)).statusCode, 200);
      }
      assert.match((await a.app.inject({ url: '/metrics', headers: bearer(OPS_TOKEN) })).body, /^signet_redis_shared 1$/m);
      assert.ok(logged.some((l) => /answers again/.test(l.msg)));
    } finally {
      await a.close();
      await redis.close();
    }
  });
});

describe('periodic tasks across nodes', () => {
  test('two workers on one database run a periodic task once per interval, and one alone carries on', async () => {
    const intervalMs = 300;
    const runs: { node: 'A' | 'B'; at: number }[] = [];
    const task = (node: 'A' | 'B'): PeriodicTask[] => [{ name: 'test-scale-tick', run: async () => void runs.push({ node, at: Date.now() }) }];
    const nodes = await twoNodes({ env: { SCHEDULER_INTERVAL_MS: String(intervalMs) }, periodic: task });
    try {
      const { a, b } = nodes;
      await a.container.worker.start();
      await b.container.worker.start();
      // Both workers tick at start and then every 300 ms or so (slower on a loaded machine): each of
      // them alone would run it at every tick, the two together twice as often. A few runs, however
      // long a loaded machine takes to make them (120 s bounds a hang).
      for (const deadline = Date.now() + 120_000; runs.length < 4; await sleep(50)) {
        if (Date.now() > deadline) throw new Error(`ran ${runs.length} times in 120 s`);
      }
      await a.container.worker.stop();
      const together = runs.length;
      for (let i = 1; i < runs.length; i++) {
        const gap = runs[i]!.at - runs[i - 1]!.at;
        assert.ok(gap >= intervalMs * 0.8, `runs ${i - 1} (${runs[i - 1]!.node}) and ${i} (${runs[i]!.node}) only ${gap} ms apart: ${JSON.stringify(runs)}`);
      }

      // A stopped: B runs it from now on, still once per interval.
      for (const deadline = Date.now() + 120_000; runs.length < together + 2; await sleep(50)) {
        if (Date.now() > deadline) throw new Error(`B ran it ${runs.length - together} times after A stopped`);
      }
      await b.container.worker.stop();
      assert.ok(runs.slice(together).every((r) => r.node === 'B'));
      for (let i = together; i < runs.length; i++) assert.ok(runs[i]!.at - runs[i - 1]!.at >= intervalMs * 0.8);
    } finally {
      await nodes.close();
    }
  });
});
