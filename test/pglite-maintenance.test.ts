import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf, type Database } from '../src/db/client.js';
import { maintainTables, storeMaintenance } from '../src/db/pglite-maintenance.js';
import { createWorker } from '../src/jobs/worker.js';
import { openTestDatabase } from './harness.js';

const silent = { info() {}, warn() {}, error() {} };
let dataDir: string;
let database: Database;

before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'signet-maintenance-'));
  database = await openTestDatabase(dataDir);
  await database.migrate();
});

after(async () => {
  await database.close();
  await database.dropSchema?.();
  rmSync(dataDir, { recursive: true, force: true });
});

const run = async <T>(query: ReturnType<typeof sql>) => rowsOf<T>(await database.db.execute(query));

/** A customer with `count` envelopes, as one busy customer's first minutes leave them: never analyzed. */
async function customerWithEnvelopes(count: number): Promise<{ customerId: string; envelopeId: string }> {
  const [{ id: customerId }] = await run<{ id: string }>(sql`INSERT INTO customers (email, name, sandbox_limit) VALUES ('busy@example.com', 'Busy', 5) RETURNING id`);
  await run(sql`
    INSERT INTO envelopes (customer_id, mode, engine_envelope_id, status, document_sha256, page_count, expires_at, storage_expiry_days, storage_expires_at)
    SELECT ${customerId}, 'live', 'engine-' || g, 'DRAFT', 'sha', 1, now() + interval '30 days', 30, now() + interval '30 days'
    FROM generate_series(1, ${count}) g`);
  const [{ id: envelopeId }] = await run<{ id: string }>(sql`SELECT id FROM envelopes ORDER BY engine_envelope_id DESC LIMIT 1`);
  return { customerId, envelopeId };
}

/** The index PostgreSQL reads for the owner-scoped lookup every envelope route makes. */
async function lookupIndex(customerId: string, envelopeId: string): Promise<string> {
  const [row] = await run<{ 'QUERY PLAN': unknown }>(
    sql`EXPLAIN (FORMAT JSON) SELECT * FROM envelopes WHERE id = ${envelopeId} AND customer_id = ${customerId} AND mode = 'live' FOR UPDATE`,
  );
  const plan = row['QUERY PLAN'];
  return JSON.stringify(typeof plan === 'string' ? JSON.parse(plan) : plan).match(/"Index Name":"([^"]+)"/)?.[1] ?? 'none';
}

test('after maintenance a per-envelope lookup reads the primary key, not every envelope of its customer; an unchanged table is left alone', async () => {
  const { customerId, envelopeId } = await customerWithEnvelopes(3000);
  assert.ok((await maintainTables(database.db)).includes('envelopes'));
  assert.equal(await lookupIndex(customerId, envelopeId), 'envelopes_pkey');
  assert.deepEqual(await maintainTables(database.db), [], 'nothing grew since: no table is vacuumed again');

  // Updates leave dead rows that grow the table: it is vacuumed again.
  await run(sql`UPDATE envelopes SET title = 'renamed'`);
  assert.ok((await maintainTables(database.db)).includes('envelopes'));
  const [{ live }] = await run<{ live: number }>(sql`SELECT count(*)::int AS live FROM envelopes`);
  assert.equal(live, 3000);
});

test('the worker runs the maintenance on PGlite; PostgreSQL is left to its autovacuum', async () => {
  const { jobs, periodic } = storeMaintenance(database);
  if (database.kind === 'postgres') {
    assert.deepEqual({ jobs, periodic }, { jobs: [], periodic: [] });
    return;
  }
  await run(sql`CREATE TABLE grown (n int)`);
  await run(sql`INSERT INTO grown SELECT generate_series(1, 5000)`);
  const analyzed = async () => (await run<{ reltuples: number }>(sql`SELECT reltuples FROM pg_class WHERE relname = 'grown'`))[0].reltuples >= 0;
  assert.equal(await analyzed(), false);
  const worker = createWorker({ database, jobs, periodic, concurrency: 1, leaseMs: 30_000, intervalMs: 50, logger: silent });
  await worker.start();
  try {
    for (let i = 0; i < 100 && !(await analyzed()); i++) await sleep(50);
    assert.equal(await analyzed(), true, 'the table was analyzed by the job the periodic task queued');
  } finally {
    await worker.stop();
  }
});
