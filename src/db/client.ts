import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'drizzle-orm';
import { readMigrationFiles } from 'drizzle-orm/migrator';
import type { PgDatabase, PgQueryResultHKT } from 'drizzle-orm/pg-core';
import type { PGliteOptions } from '@electric-sql/pglite';
import { initPgliteDataDir } from './pglite-initdb.js';
import * as schema from './schema/index.js';

export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;
export type Tx = Parameters<Parameters<Db['transaction']>[0]>[0];
/** What repo methods take: the pool or an open transaction. */
export type DbOrTx = Db | Tx;

export interface Database {
  readonly kind: 'pglite' | 'postgres';
  /** Where the data lives, for the start-up line. */
  readonly location: string;
  readonly db: Db;
  /** Runs pending migrations under an advisory lock, so nodes starting together do not race. */
  migrate(): Promise<void>;
  /** Throws when the database does not answer. */
  ping(): Promise<void>;
  /**
   * Subscribes to NOTIFY on a channel; returns the unsubscribe function. A lost listening connection is
   * reopened with backoff, and `onReconnect` runs once it listens again: notifications sent while it was
   * away are gone, so a subscriber that caches must drop what it holds.
   */
  listen(channel: string, onNotify: (payload: string) => void, onReconnect?: () => void): Promise<() => Promise<void>>;
  close(): Promise<void>;
  /**
   * Connection use, for /metrics: PostgreSQL's pool (its size limit, connections open, idle, and
   * queries waiting for one); PGlite is one in-process connection, with nothing idle or waiting to see.
   */
  poolStats?(): PoolStats;
  /** Drops the per-run schema (tests on PostgreSQL); absent otherwise. */
  dropSchema?: () => Promise<void>;
}

export type PoolStats = { max: number; total: number; idle?: number; waiting?: number };

const MIGRATIONS_FOLDER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
/** Arbitrary constant naming Signet's migration lock among other users of the same database. */
const MIGRATION_LOCK_KEY = 7_140_221_001;
/** Backoff between attempts to reopen a lost LISTEN connection: doubling from the first to the last. */
const LISTEN_RETRY_MS = { first: 100, max: 30_000 };

/**
 * `embedded` picks the store used when there is no databaseUrl: PGlite (default) or embedded PostgreSQL.
 * `pgliteImage` starts a new PGlite database from a data directory dumped by `dumpPgliteImage` instead
 * of running initdb (about 3 s of WASM work); it is ignored when the directory already holds a database.
 * `pglite` passes further options to PGlite.create: tests reuse one compiled WASM module per process.
 */
export type DatabaseOptions = {
  databaseUrl?: string;
  dataDir: string;
  poolSize?: number;
  schemaName?: string;
  embedded?: 'pglite' | 'postgres';
  pgliteImage?: Blob;
  pglite?: Pick<PGliteOptions, 'pgliteWasmModule' | 'fsBundle'>;
  /** PGlite's shared_buffers (MB): its page cache, inside its WebAssembly memory, which it touches whole at start. */
  pgliteSharedBuffersMb?: number;
  timeouts?: Partial<DatabaseTimeouts>;
};

/**
 * PostgreSQL's bounds on waiting (DESIGN §4.17), in milliseconds: for a connection from the pool, on
 * one statement, on a transaction that holds its connection doing nothing (0: no bound). A request that
 * waits for a connection gives up instead of queueing behind the whole pool for ever, and a transaction
 * whose process stalls gives its locks back.
 */
export type DatabaseTimeouts = { acquireMs: number; statementMs: number; idleInTransactionMs: number };
/**
 * PostgreSQL's default is 128 MB, and PGlite writes its whole buffer pool when it starts, so every
 * MB is resident from the first second (128 MB: some 120 MiB of an idle server's RSS). The files
 * stay in the operating system's page cache, so a smaller pool costs a read from that cache, not
 * from disk (docs/operating.md: Memory).
 */
export const DEFAULT_PGLITE_SHARED_BUFFERS_MB = 8;
export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = { acquireMs: 10_000, statementMs: 60_000, idleInTransactionMs: 60_000 };

export async function openDatabase(opts: DatabaseOptions): Promise<Database> {
  const timeouts = { ...DEFAULT_DATABASE_TIMEOUTS, ...opts.timeouts };
  if (opts.databaseUrl) return openPostgres(opts.databaseUrl, opts.poolSize ?? 10, timeouts, opts.schemaName);
  return opts.embedded === 'postgres' ? openEmbeddedPostgres(opts.dataDir, opts.poolSize ?? 10, timeouts) : openPglite(opts.dataDir, opts.pgliteImage, opts.pgliteSharedBuffersMb ?? DEFAULT_PGLITE_SHARED_BUFFERS_MB, opts.pglite);
}

/** A PostgreSQL server of our own in DATA_DIR/pg, used through the same path as DATABASE_URL. */
async function openEmbeddedPostgres(dataDir: string, poolSize: number, timeouts: DatabaseTimeouts): Promise<Database> {
  const { startEmbeddedPostgres } = await import('./embedded-postgres.js');
  const server = await startEmbeddedPostgres(dataDir);
  let database: Database;
  try {
    database = await openPostgres(server.url, poolSize, timeouts);
  } catch (err) {
    await server.release();
    throw err;
  }
  return {
    ...database,
    location: `embedded PostgreSQL in ${path.join(dataDir, 'pg')}`,
    close: async () => {
      await database.close();
      // After our connections are gone: the last Signet process to leave stops the server.
      await server.release();
    },
  };
}

/** The SQLSTATE of a failed query, as node-postgres or PGlite report it (drizzle wraps it in its own error's `cause`). */
export function pgErrorCode(err: unknown): string | undefined {
  for (let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 3; e = e.cause as typeof e, depth++) {
    if (typeof e.code === 'string') return e.code;
  }
  return undefined;
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
    // Unbounded here: a node waits for another's migrations to finish, and DDL on a big table takes long.
    await tx.execute(sql`SET LOCAL statement_timeout = 0`);
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

/**
 * The data directory of a migrated in-memory PGlite, as a tar that `pgliteImage` takes. Every database
 * started from it untars it first, so it is kept small: 1 MiB WAL segments instead of 16, and without
 * the template databases, which only CREATE DATABASE reads (41 MB became 16 MB, and a start about 1 s
 * less CPU).
 */
export async function dumpPgliteImage(): Promise<Blob> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  const client = await PGlite.create('memory://', { initDbStartParams: ['--wal-segsize=1'] });
  try {
    await runMigrations(drizzle(client, { schema }) as unknown as Db);
    await client.exec(`UPDATE pg_database SET datistemplate = false WHERE datname IN ('template0', 'template1')`);
    await client.exec('DROP DATABASE template0');
    await client.exec('DROP DATABASE template1');
    await client.exec('CHECKPOINT');
    return await client.dumpDataDir('none');
  } finally {
    await client.close();
  }
}

async function openPglite(dataDir: string, image: Blob | undefined, sharedBuffersMb: number, options: DatabaseOptions['pglite'] = {}): Promise<Database> {
  const { PGlite } = await import('@electric-sql/pglite');
  const { drizzle } = await import('drizzle-orm/pglite');
  // `memory://` keeps the whole database in memory (tests); anything else is a directory under DATA_DIR.
  const dir = dataDir.startsWith('memory://') ? dataDir : path.join(dataDir, 'pglite');
  const fresh = dir.startsWith('memory://') || !existsSync(path.join(dir, 'PG_VERSION'));
  if (!dir.startsWith('memory://')) mkdirSync(dir, { recursive: true });
  // A first start without an image runs initdb elsewhere, so that its memory does not stay here.
  if (fresh && !image && !dir.startsWith('memory://')) await initPgliteDataDir(dir);
  const startParams = [...PGlite.defaultStartParams, '-c', `shared_buffers=${sharedBuffersMb}MB`];
  const client = await PGlite.create(dir, { ...options, startParams, ...(image && fresh ? { loadDataDir: image } : {}) });
  const db = drizzle(client, { schema }) as unknown as Db;
  return {
    kind: 'pglite',
    location: `embedded PGlite in ${dir}`,
    db,
    migrate: () => runMigrations(db),
    ping: async () => {
      await client.query('SELECT 1');
    },
    // In-process: the subscription cannot be lost, so there is nothing to reconnect.
    listen: async (channel, onNotify) => client.listen(channel, onNotify),
    close: () => client.close(),
    poolStats: () => ({ max: 1, total: 1 }),
  };
}

async function openPostgres(url: string, poolSize: number, timeouts: DatabaseTimeouts, schemaName?: string): Promise<Database> {
  const pg = (await import('pg')).default;
  const { drizzle } = await import('drizzle-orm/node-postgres');
  // Tests give each run its own schema; `search_path` set per connection keeps SQL unqualified.
  const options = schemaName ? `-c search_path=${schemaName}` : undefined;
  const pool = new pg.Pool({
    connectionString: url,
    max: poolSize,
    options,
    connectionTimeoutMillis: timeouts.acquireMs,
    // 0 leaves the server's own setting (none, by default).
    statement_timeout: timeouts.statementMs || undefined,
    idle_in_transaction_session_timeout: timeouts.idleInTransactionMs || undefined,
  });
  pool.on('error', () => {
    // An idle client lost its connection; the pool replaces it. Queries in flight still see their error.
  });
  // A connection the server ends while it is checked out (idle_in_transaction_session_timeout, a restart)
  // fails its transaction's next query, and the pool drops it on release; unheard, its 'error' event
  // would end the process.
  pool.on('connect', (client) => client.on('error', () => {}));
  if (schemaName) {
    const c = await pool.connect();
    try {
      await c.query(`CREATE SCHEMA IF NOT EXISTS "${schemaName.replace(/"/g, '')}"`);
    } finally {
      c.release();
    }
  }
  const db = drizzle(pool, { schema }) as unknown as Db;
  type PgClient = InstanceType<typeof pg.Client>;
  const listeners = new Set<() => Promise<void>>();

  /** Opens a connection that LISTENs on the channel; `onLost` runs once when it errors or ends. */
  async function openListener(channel: string, onNotify: (payload: string) => void, onLost: (c: PgClient) => void): Promise<PgClient> {
    // The application name tells operators (and tests) which backend is a listener, and for which schema.
    const client = new pg.Client({ connectionString: url, options, application_name: `signet listen${schemaName ? ` ${schemaName}` : ''}` });
    let lost = false;
    const lose = () => {
      if (lost) return;
      lost = true;
      onLost(client);
    };
    client.on('error', lose);
    client.on('end', lose);
    client.on('notification', (msg) => {
      if (msg.channel === channel) onNotify(msg.payload ?? '');
    });
    try {
      await client.connect();
      await client.query(`LISTEN "${channel.replace(/"/g, '')}"`);
    } catch (err) {
      lost = true;
      await client.end().catch(() => {});
      throw err;
    }
    return client;
  }

  return {
    kind: 'postgres',
    location: 'PostgreSQL (DATABASE_URL)',
    db,
    migrate: () => runMigrations(db),
    ping: async () => {
      await pool.query('SELECT 1');
    },
    listen: async (channel, onNotify, onReconnect) => {
      let stopped = false;
      let current: PgClient | undefined;
      let retry: NodeJS.Timeout | undefined;
      let delayMs = LISTEN_RETRY_MS.first;
      // A restart, a failover or an idle-connection killer ends the connection; without a new one the
      // subscriber would silently stop hearing anything.
      const onLost = (lostClient: PgClient) => {
        if (stopped || lostClient !== current) return;
        current = undefined;
        void lostClient.end().catch(() => {});
        schedule();
      };
      const schedule = () => {
        retry = setTimeout(() => void reopen(), delayMs);
        retry.unref();
        delayMs = Math.min(delayMs * 2, LISTEN_RETRY_MS.max);
      };
      const reopen = async () => {
        retry = undefined;
        if (stopped) return;
        let client: PgClient;
        try {
          client = await openListener(channel, onNotify, onLost);
        } catch {
          if (!stopped) schedule();
          return;
        }
        if (stopped) return void (await client.end().catch(() => {}));
        current = client;
        delayMs = LISTEN_RETRY_MS.first;
        onReconnect?.();
      };
      current = await openListener(channel, onNotify, onLost);
      const stop = async () => {
        stopped = true;
        listeners.delete(stop);
        clearTimeout(retry);
        await current?.end().catch(() => {});
        current = undefined;
      };
      listeners.add(stop);
      return stop;
    },
    close: async () => {
      await Promise.all([...listeners].map((stop) => stop()));
      await pool.end();
    },
    poolStats: () => ({ max: poolSize, total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
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
