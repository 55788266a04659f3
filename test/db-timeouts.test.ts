import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, describe, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { loadConfig } from '../src/config.js';
import { openDatabase, type Database, type DatabaseTimeouts } from '../src/db/client.js';
import { bearer, createTestApp } from './harness.js';

/**
 * PostgreSQL's bounds on waiting (DESIGN §4.17): a query that finds no free connection gives up, and a
 * session ends a statement that runs too long and a transaction left idle. PGlite has one in-process
 * connection and nothing of a pool: these run on PostgreSQL only.
 */
const url = process.env.DATABASE_URL;
const skip = !url && 'PostgreSQL only: PGlite has no pool and no session settings to test';
const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-db-timeouts-'));
const opened: Database[] = [];

after(async () => {
  for (const d of opened) {
    await d.close().catch(() => undefined);
    await d.dropSchema?.();
  }
  rmSync(dataDir, { recursive: true, force: true });
});

async function open(poolSize: number, timeouts: Partial<DatabaseTimeouts>): Promise<Database> {
  const database = await openDatabase({ databaseUrl: url, dataDir, poolSize, schemaName: `t_${randomBytes(6).toString('hex')}`, timeouts });
  opened.push(database);
  return database;
}

/** Resolves with what `work` answers, or with 'no answer' once `ms` passed: a hang must fail the test, not stall it. */
const within = <T>(ms: number, work: Promise<T>) => Promise.race([work, sleep(ms).then(() => 'no answer' as const)]);

describe('database timeouts', () => {
  test('the defaults, and each variable read', () => {
    const base = { DATA_DIR: dataDir, OPS_TOKEN: 'o'.repeat(32), JWT_SECRET: 'j'.repeat(64), SIGNING_LINK_SECRET: 's'.repeat(64) };
    assert.deepEqual(loadConfig(base).databaseTimeouts, { acquireMs: 10_000, statementMs: 60_000, idleInTransactionMs: 60_000 });
    const set = loadConfig({ ...base, DATABASE_ACQUIRE_TIMEOUT_MS: '2500', DATABASE_STATEMENT_TIMEOUT_MS: '0', DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: '30000' });
    assert.deepEqual(set.databaseTimeouts, { acquireMs: 2500, statementMs: 0, idleInTransactionMs: 30_000 });
    assert.throws(() => loadConfig({ ...base, DATABASE_ACQUIRE_TIMEOUT_MS: '0' }), /DATABASE_ACQUIRE_TIMEOUT_MS/);
  });

  test('a request that finds no free connection is answered 503 SERVICE_UNAVAILABLE once DATABASE_ACQUIRE_TIMEOUT_MS passed', { skip }, async () => {
    const database = await open(1, { acquireMs: 300 });
    await database.migrate();
    const t = await createTestApp({ overrides: { database }, env: { AUTH_CACHE_TTL_MS: '0' } });
    let release!: () => void;
    const holding = database.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT 1`);
      await new Promise<void>((r) => (release = r));
    });
    try {
      await sleep(50);
      const res = await within(5000, t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) }));
      assert.notEqual(res, 'no answer', 'the request waited for a connection without end');
      if (res === 'no answer') return;
      assert.equal(res.statusCode, 503, res.body);
      assert.equal(res.json().code, 'SERVICE_UNAVAILABLE');
      assert.ok(res.headers['retry-after']);
    } finally {
      release();
      await holding;
    }
    assert.equal((await t.app.inject({ url: '/v1/account', headers: bearer(t.customer.apiKey) })).statusCode, 200);
    await t.close();
  });

  test('a transaction left idle longer than DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS is ended by the server', { skip }, async () => {
    const database = await open(2, { idleInTransactionMs: 200 });
    const idle = database.db.transaction(async (tx) => {
      await tx.execute(sql`SELECT 1`);
      await sleep(1000);
      await tx.execute(sql`SELECT 1`);
    });
    const outcome = await within(5000, idle.then(() => 'committed', (err: Error) => err));
    assert.ok(outcome instanceof Error, `the idle transaction went on: ${String(outcome)}`);
    // The pool replaces the ended session.
    await database.db.execute(sql`SELECT 1`);
  });

  test('a statement running longer than DATABASE_STATEMENT_TIMEOUT_MS is cancelled (57014)', { skip }, async () => {
    const database = await open(1, { statementMs: 200 });
    const outcome = await within(5000, database.db.execute(sql`SELECT pg_sleep(2)`).then(() => 'finished', (err: unknown) => err));
    assert.ok(outcome instanceof Error, `the statement ran to its end: ${String(outcome)}`);
    let e: unknown = outcome;
    while (e && (e as { code?: string }).code !== '57014') e = (e as { cause?: unknown }).cause;
    assert.ok(e, `query_canceled expected: ${String(outcome)}`);
  });

  test('migrations are not bound by the statement timeout (a node may wait for another one\'s migrations)', { skip }, async () => {
    const database = await open(1, { statementMs: 5 });
    await database.migrate();
  });
});
