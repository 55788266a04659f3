import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import * as schema from './schema/index.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** What repo methods take: the pool or an open transaction. */
export type DbOrTx = Db | Tx;

export interface Database {
  readonly kind: 'pglite' | 'postgres';
  readonly db: Db;
  /** Runs pending migrations under an advisory lock, so nodes starting together do not race. */
  migrate(): Promise<void>;
  /** Throws when the database does not answer. */
  ping(): Promise<void>;
  /** Subscribes to NOTIFY on a channel; returns the unsubscribe function. */
  listen(channel: string, onNotify: (payload: string) => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  /** Drops the per-run schema (tests on PostgreSQL); absent otherwise. */
  dropSchema?: () => Promise<void>;
}

const MIGRATIONS_FOLDER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Arbitrary constant naming Signet's migration lock among other users of the same database. */
const MIGRATION_LOCK_KEY = 7_140_221_001;

export type DatabaseOptions = { databaseUrl?: string; dataDir: string; poolSize?: number; schemaName?: string };

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  return opts.databaseUrl ? openPostgres(opts.databaseUrl, opts.poolSize ?? 10, opts.schemaName) : openPglite(opts.dataDir);
}

/** Rows of a raw `db.execute(sql…)`; node-postgres and PGlite both answer with `rows`. */
export function rowsOf<T>(result: unknown): T[] {
  return (result as { rows: T[] }).rows;
}

async function runMigrations(db: Db): Promise<void> {
  const migrations = readMigrationFiles({ migrationsFolder: MIGRATIONS_FOLDER });
  // One transaction for the whole set: PostgreSQL DDL is transactional, so a crash leaves either the
  // old schema or the new one, and the xact lock makes a second node wait and then find nothing to do.
  await db.transaction(async (tx) => {
    await tx.execute(sql`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`);
    await tx.execute(sql`CREATE TABLE IF NOT EXISTS signet_migrations (
      hash text PRIMARY KEY, created_at bigint NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const applied = new Set(rowsOf<{ hash: string }>(await tx.execute(sql`SELECT hash FROM signet_migrations`)).map((r) => r.hash));
    for (const m of migrations) {
      if (applied.has(m.hash)) continue;
      // drizzle-kit qualifies references with "public"; dropping it lets search_path choose the schema.
      for (const statement of m.sql) if (statement.trim()) await tx.execute(sql.raw(statement.replaceAll('"public".', '')));
      await tx.execute(sql`INSERT INTO signet_migrations (hash, created_at) VALUES (${m.hash}, ${m.folderMillis})`);
    }
  });
}

async function openPglite(dataDir: string): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  // `memory://` keeps the whole database in memory (tests); anything else is a directory under DATA_DIR.
  const dir = dataDir.startsWith('memory://') ? dataDir : path.join(dataDir, 'pglite');
  if (!dir.startsWith('memory://')) mkdirSync(dir, { recursive: true });
  const client = await PGlite.create(dir);
  const db = drizzle(client, { schema }) as unknown as Db;
  return {
    kind: 'pglite',
    db,
    migrate: () => runMigrations(db),
    ping: async () => {
      await client.query('SELECT 1');
    },
    listen: async (channel, onNotify) => client.listen(channel, onNotify),
    close: () => client.close(),
  };
}

async function openPostgres(url: string, poolSize: number, schemaName?: string): Promise<Database> {
  const pg = (await import('pg')).default;
  const { drizzle } = await import('drizzle-orm/node-postgres');
  // Tests give each run its own schema; `search_path` set per connection keeps SQL unqualified.
  const options = schemaName ? `-c search_path=${schemaName}` : undefined;
  const pool = new pg.Pool({ connectionString: url, max: poolSize, options });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it. Queries in flight still see their error.
  });
  if (schemaName) {
    const c = await pool.connect();
    try {
      await c.query(`CREATE SCHEMA IF NOT EXISTS "${schemaName.replace(/"/g, '')}"`);
    } finally {
      c.release();
    }
  }
  const db = drizzle(pool, { schema }) as unknown as Db;
  const listeners: InstanceType<typeof pg.Client>[] = [];
  return {
    kind: 'postgres',
    db,
    migrate: () => runMigrations(db),
    ping: async () => {
      await pool.query('SELECT 1');
    },
    listen: async (channel, onNotify) => {
      const client = new pg.Client({ connectionString: url, options });
      client.on('error', () => {});
      await client.connect();
      client.on('notification', (msg) => {
        if (msg.channel === channel) onNotify(msg.payload ?? '');
      });
      await client.query(`LISTEN "${channel.replace(/"/g, '')}"`);
      listeners.push(client);
      return async () => {
        listeners.splice(listeners.indexOf(client), 1);
        await client.end().catch(() => {});
      };
    },
    close: async () => {
      await Promise.all(listeners.splice(0).map((c) => c.end().catch(() => {})));
      await pool.end();
    },
    dropSchema: schemaName
      ? async () => {
          const c = new pg.Client({ connectionString: url });
          await c.connect();
          try {
            await c.query(`DROP SCHEMA IF EXISTS "${schemaName.replace(/"/g, '')}" CASCADE`);
          } finally {
            await c.end();
          }
        }
      : undefined,
  };
}
