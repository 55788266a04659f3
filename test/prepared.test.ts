import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { and, eq, like, sql } from 'drizzle-orm';
import { rowsOf, type Database, type DbOrTx } from '../src/db/client.js';
import { preparedPer, preparedSql } from '../src/db/prepared.js';
import { apiKeys, customers, jobs } from '../src/db/schema/index.js';
import { createAccountRepo } from '../src/modules/account/account.repo.js';
import { createWebhooksRepo } from '../src/modules/webhooks/webhooks.repo.js';
import { openTestDatabase } from './harness.js';

let dataDir: string;
let database: Database;

before(async () => {
  dataDir = mkdtempSync(path.join(tmpdir(), 'signet-prepared-'));
  database = await openTestDatabase(dataDir);
  await database.migrate();
});

after(async () => {
  await database.close();
  await database.dropSchema?.();
  rmSync(dataDir, { recursive: true, force: true });
});

test('a prepared statement is built once per process and runs inside each transaction it is given', async () => {
  let builds = 0;
  const byType = preparedPer((db) => {
    builds++;
    return db.select({ id: jobs.id, type: jobs.type }).from(jobs).where(eq(jobs.type, sql.placeholder('type'))).prepare('test_jobs_by_type');
  });
  const seen: string[][] = [];
  for (const type of ['prepared-a', 'prepared-b', 'prepared-c']) {
    await database.db.transaction(async (tx) => {
      // Uncommitted: only a statement bound to this transaction's connection sees the row.
      await tx.insert(jobs).values({ type, payload: {} });
      seen.push((await byType(tx).execute({ type })).map((r) => r.type));
      // The same transaction reuses its statement.
      assert.equal(byType(tx), byType(tx));
    });
  }
  assert.deepEqual(seen, [['prepared-a'], ['prepared-b'], ['prepared-c']], 'each transaction ran the statement with its own parameters and saw its own write');
  // The pool binds it too, from the same build, and sees what committed.
  assert.deepEqual((await byType(database.db).execute({ type: 'prepared-b' })).map((r) => r.type), ['prepared-b']);
  assert.equal(builds, 1, 'built once, bound to each executor');
});

test("a prepared select's rows are mapped by a mapper worked out once, into what drizzle's own mapping makes", async () => {
  const accounts = createAccountRepo();
  const tag = `mapper-${randomUUID()}`;
  const keyed = await accounts.insertCustomer(database.db, { email: `${tag}-a@example.com`, emailVerified: true, name: 'A', sandboxLimit: 3 });
  await accounts.insertCustomer(database.db, { email: `${tag}-b@example.com`, emailVerified: false, name: 'B', sandboxLimit: 5 });
  await accounts.insertApiKey(database.db, { customerId: keyed.id, mode: 'live', keyHash: `${tag}-hash`, prefix: 'svc_live_mapr' });
  // Every kind of field: whole columns (timestamps, bigint, arrays, jsonb), a nested object, a left join
  // matched and unmatched (a null object), an SQL expression with its decoder.
  const query = (db: DbOrTx) =>
    db
      .select({
        customer: customers,
        key: { id: apiKeys.id, prefix: apiKeys.prefix, createdAt: apiKeys.createdAt },
        twice: sql<number>`${customers.sandboxLimit} * 2`.mapWith(Number),
      })
      .from(customers)
      .leftJoin(apiKeys, eq(apiKeys.customerId, customers.id))
      .where(and(like(customers.email, sql.placeholder('pattern'))))
      .orderBy(customers.email);
  const stmt = preparedPer((db) => query(db).prepare('test_mapper_customers'));
  assert.equal(typeof (stmt(database.db) as unknown as { customResultMapper?: unknown }).customResultMapper, 'function', 'its own mapper');
  const prepared = await stmt(database.db).execute({ pattern: `${tag}%` });
  // drizzle's mapping: the same select, not prepared here.
  const plain = await query(database.db).prepare('test_mapper_plain').execute({ pattern: `${tag}%` });
  assert.equal(prepared.length, 2);
  assert.deepEqual(prepared, plain);
  assert.equal(prepared[1].key, null, 'an unmatched left join is a null object');
  assert.equal(prepared[0].key?.prefix, 'svc_live_mapr');
  assert.ok(prepared[0].customer.createdAt instanceof Date);
  assert.equal(typeof prepared[0].customer.balanceMicros, 'bigint');
  assert.equal(prepared[0].twice, 6);
});

test('a raw statement is built once per key and runs with each call\'s values', async () => {
  const builds: string[] = [];
  const count = preparedSql((key) => {
    builds.push(key);
    return sql`SELECT count(*)::int AS n FROM jobs WHERE type = ${key} AND payload->>'n' = ${sql.placeholder('n')}`;
  });
  await database.db.insert(jobs).values([
    { type: 'raw-a', payload: { n: '1' } },
    { type: 'raw-a', payload: { n: '2' } },
    { type: 'raw-b', payload: { n: '1' } },
  ]);
  const n = async (db: DbOrTx, key: string, value: string) => rowsOf<{ n: number }>(await count(db, key, { n: value }))[0].n;
  assert.equal(await n(database.db, 'raw-a', '1'), 1);
  assert.equal(await n(database.db, 'raw-a', '3'), 0);
  assert.equal(await n(database.db, 'raw-b', '1'), 1);
  await database.db.transaction(async (tx) => {
    await tx.insert(jobs).values({ type: 'raw-b', payload: { n: '1' } });
    assert.equal(await n(tx, 'raw-b', '1'), 2, 'bound to the transaction: it sees its uncommitted row');
  });
  assert.deepEqual(builds, ['raw-a', 'raw-b'], 'built once per key');
});

test("an event's lookup of its owner's webhook registrations is prepared, not planned for every event (proven on PostgreSQL)", async (t) => {
  if (!process.env.DATABASE_URL) return t.skip('PGlite has no prepared statements to see');
  const repo = createWebhooksRepo();
  const owner = { customerId: randomUUID(), mode: 'live' as const };
  await database.db.transaction(async (tx) => {
    assert.deepEqual(await repo.active(tx, owner), [], 'no registrations');
    // pg_prepared_statements is the session's: the transaction's connection is the one that ran the lookup.
    const held = rowsOf<{ statement: string }>(await tx.execute(sql`SELECT statement FROM pg_prepared_statements`)).map((r) => r.statement.replace(/\s+/g, ' '));
    assert.ok(held.some((s) => /from "webhooks" where/i.test(s)), `the lookup is prepared; held:\n${held.join('\n')}`);
  });
});
