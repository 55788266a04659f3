import { sql } from 'drizzle-orm';
import { z } from 'zod';
import { enqueue } from '../jobs/queue.js';
import { defineJob, type PeriodicTask } from '../jobs/worker.js';
import { rowsOf, type Database, type Db } from './client.js';

export const DB_MAINTENANCE_JOB = 'db.maintain-tables';

/** As often as PostgreSQL's autovacuum looks (autovacuum_naptime's default). */
const MAINTAIN_EVERY_MS = 60_000;

/**
 * Brings the planner's statistics up to date, and reclaims dead rows, in the tables that grew by more
 * than a fifth (or a first page) since they were last vacuumed or analyzed. Answers their names.
 *
 * PGlite runs no autovacuum, so without this no table is ever analyzed or vacuumed. Without
 * statistics the planner reads a per-id lookup that also names its owner (`id = $1 AND customer_id =
 * $2 AND mode = $3`) through the (customer_id, mode) index rather than the primary key: every lookup
 * then reads all of that customer's rows, and gets slower with each envelope they make. Growth stands
 * in for autovacuum's row counters, which PGlite does not keep up to date: updates and deletes that
 * are not reclaimed grow the table too.
 */
export async function maintainTables(db: Db): Promise<string[]> {
  const grown = rowsOf<{ name: string }>(
    await db.execute(sql`
      SELECT c.relname AS name
      FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE c.relkind = 'r' AND n.nspname = current_schema()
        AND pg_relation_size(c.oid) / current_setting('block_size')::int > CASE WHEN c.reltuples < 0 THEN 0 ELSE c.relpages * 1.2 + 1 END
      ORDER BY c.relname`),
  );
  // VACUUM runs outside any transaction, one table at a time, so requests wait for one table at most.
  for (const { name } of grown) await db.execute(sql`VACUUM (ANALYZE) ${sql.identifier(name)}`);
  return grown.map((t) => t.name);
}

/** The maintenance as a job: the worker runs it outside any transaction, on the store's one connection. */
const dbMaintenanceJob = (deps: { db: Db }) =>
  defineJob({
    type: DB_MAINTENANCE_JOB,
    payload: z.object({}),
    async handle() {
      await maintainTables(deps.db);
    },
  });

/** Queues at most one maintenance per minute, whatever the scheduler's interval. */
export const dbMaintenanceTask = (now: () => number = Date.now): PeriodicTask => ({
  name: 'queue-db-maintenance',
  run: (tx) => enqueue(tx, { type: DB_MAINTENANCE_JOB, payload: {}, dedupeKey: `db-maintain:${Math.floor(now() / MAINTAIN_EVERY_MS)}`, maxAttempts: 3 }),
});

/** The job and its schedule where the store needs them (PGlite); PostgreSQL's autovacuum does this itself. */
export const storeMaintenance = (database: Database) =>
  database.kind === 'pglite' ? { jobs: [dbMaintenanceJob({ db: database.db })], periodic: [dbMaintenanceTask()] } : { jobs: [], periodic: [] };
