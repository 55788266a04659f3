import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { sql } from 'drizzle-orm';
import type { FastifyRequest } from 'fastify';
import { buildApp } from '../src/app.js';
import { createContainer } from '../src/container.js';
import { openDatabase, rowsOf, type Database, type Db } from '../src/db/client.js';
import { sha256Hex } from '../src/lib/crypto.js';
import type { AccountRepo } from '../src/modules/account/account.repo.js';
import { API_KEYS_CHANNEL, createApiKeyCache } from '../src/modules/account/api-key-cache.js';
import { apiKeyResolver } from '../src/modules/account/api-key-resolver.js';
import { OPS_TOKEN, bearer, createTestApp, testConfig } from './harness.js';

const onPostgres = process.env.DATABASE_URL ? false : 'needs PostgreSQL (DATABASE_URL)';
const until = async (what: string, check: () => boolean | Promise<boolean>, ms = 10_000) => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('a revocation NOTIFY that lands between the key read and the cache write is not undone', async () => {
  const cache = createApiKeyCache({ ttlMs: 30_000 });
  const apiKey = `svc_live_${randomBytes(16).toString('hex')}`;
  const keyHash = sha256Hex(apiKey);
  let readDone!: () => void;
  const readGate = new Promise<void>((r) => (readDone = r));
  let readStarted!: () => void;
  const started = new Promise<void>((r) => (readStarted = r));
  // The read sees the key still active (the revocation has not committed yet)...
  const accounts = {
    findActiveKeyByHash: async () => {
      readStarted();
      await readGate;
      return { id: 'k', customerId: 'c', mode: 'live' as const, prefix: apiKey.slice(0, 17) };
    },
    touchKey: async () => {},
  } as unknown as AccountRepo;
  const resolve = apiKeyResolver({ db: {} as Db, accounts, cache });
  const resolving = resolve({} as FastifyRequest, apiKey);
  await started;
  // ...then the revocation commits and its NOTIFY evicts the key before the resolver caches it.
  cache.evict(keyHash);
  readDone();
  assert.equal((await resolving)?.customerId, 'c');
  assert.equal(cache.get(keyHash), undefined, 'the stale read was not cached');
});

test('a read that started after the eviction is cached', async () => {
  const cache = createApiKeyCache({ ttlMs: 30_000 });
  const apiKey = `svc_live_${randomBytes(16).toString('hex')}`;
  cache.evict(sha256Hex(apiKey));
  const accounts = { findActiveKeyByHash: async () => ({ id: 'k', customerId: 'c', mode: 'live' as const, prefix: 'p' }), touchKey: async () => {} } as unknown as AccountRepo;
  await apiKeyResolver({ db: {} as Db, accounts, cache })({} as FastifyRequest, apiKey);
  assert.equal(cache.get(sha256Hex(apiKey))?.customerId, 'c');
});

/** Terminates the LISTEN backends of this database's schema on a channel; returns how many. */
async function terminateListeners(database: Database, channel: string): Promise<number> {
  const rows = rowsOf<{ ok: boolean }>(
    await database.db.execute(sql`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
      WHERE query = ${`LISTEN "${channel}"`} AND application_name = ${`signet listen ${String(rowsOf<{ s: string }>(await database.db.execute(sql`SELECT current_schema() AS s`))[0].s)}`}`),
  );
  return rows.filter((r) => r.ok).length;
}

test('the PostgreSQL listener reconnects after its backend is terminated, and says so', { skip: onPostgres }, async () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-listen-'));
  const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir, schemaName: `t_${randomBytes(6).toString('hex')}` });
  const channel = `t_listen_${randomBytes(4).toString('hex')}`;
  const heard: string[] = [];
  let reconnects = 0;
  const stop = await database.listen(channel, (p) => heard.push(p), () => reconnects++);
  try {
    await database.db.execute(sql`SELECT pg_notify(${channel}, 'one')`);
    await until('the first notification', () => heard.includes('one'));
    assert.equal(await terminateListeners(database, channel), 1);
    await until('the reconnect', () => reconnects === 1);
    await database.db.execute(sql`SELECT pg_notify(${channel}, 'two')`);
    await until('a notification after the reconnect', () => heard.includes('two'));
    // And again: the backoff restarts after a successful reconnect.
    assert.equal(await terminateListeners(database, channel), 1);
    await until('the second reconnect', () => reconnects === 2);
    await database.db.execute(sql`SELECT pg_notify(${channel}, 'three')`);
    await until('a notification after the second reconnect', () => heard.includes('three'));
  } finally {
    await stop();
    await database.close();
    await database.dropSchema?.();
    rmSync(dataDir, { recursive: true, force: true });
  }
  // Stopped: no reconnect happens behind our back.
  assert.equal(reconnects, 2);
});

test('a node whose key listener lost its connection clears its cache and hears revocations again', { skip: onPostgres }, async () => {
  const t = await createTestApp();
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-node2-'));
  const node2 = await createContainer(testConfig(dataDir), { database: t.container.database });
  const app2 = await buildApp(node2);
  try {
    const headers = bearer(t.customer.apiKey);
    assert.equal((await app2.inject({ url: '/v1/account', headers })).statusCode, 200);
    const keyHash = sha256Hex(t.customer.apiKey);
    assert.ok(node2.apiKeyCache.get(keyHash), 'cached on node 2');

    // Both nodes' listeners lose their connection (a restart, a failover, an idle-connection killer).
    assert.equal(await terminateListeners(t.container.database, API_KEYS_CHANNEL), 2);
    await until('node 2 to drop its cache on reconnect', () => node2.apiKeyCache.get(keyHash) === undefined);
    assert.equal((await app2.inject({ url: '/v1/account', headers })).statusCode, 200); // cached again

    const detail = await t.app.inject({ url: `/ops/customers/${t.customer.id}`, headers: bearer(OPS_TOKEN) });
    const live = detail.json().apiKeys.find((k: { mode: string }) => k.mode === 'live');
    const revoked = await t.app.inject({ method: 'DELETE', url: `/ops/customers/${t.customer.id}/api-keys/${live.keyId}`, headers: bearer(OPS_TOKEN) });
    assert.equal(revoked.statusCode, 200);
    let status = 200;
    await until('node 2 to evict the revoked key', async () => (status = (await app2.inject({ url: '/v1/account', headers })).statusCode) === 401, 3000);
    assert.equal(status, 401);
  } finally {
    await app2.close();
    await t.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
