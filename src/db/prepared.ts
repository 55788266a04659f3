import { createHash } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from './client.js';

/**
 * Memoizes a prepared statement per executor (the pool, or a transaction while it lives): drizzle then
 * skips building the SQL and PostgreSQL skips planning it, which is most of a hot read's cost. Build it
 * with `sql.placeholder` and a statement name unique in the process.
 */
export function preparedPer<T>(build: (db: DbOrTx) => T): (db: DbOrTx) => T {
  const cache = new WeakMap<DbOrTx, T>();
  return (db) => {
    let stmt = cache.get(db);
    if (!stmt) cache.set(db, (stmt = build(db)));
    return stmt;
  };
}

type DrizzleInternals = {
  dialect: { sqlToQuery(query: SQL): { sql: string; params: unknown[] } };
  session: { prepareQuery(query: { sql: string; params: unknown[] }, fields: undefined, name: string, arrayMode: false): { execute(): Promise<unknown> } };
};

/** Statement names by text: one name per distinct text, the same in every connection. */
const names = new Map<string, string>();

/**
 * `db.execute(query)` as a named prepared statement, for the raw statements of a hot write (the
 * create's CTEs): PostgreSQL then parses and plans its text once per connection instead of on every
 * call. Only for a statement whose text has a bounded number of shapes (rows travel as one JSON
 * parameter, not as a VALUES list per row): each shape stays prepared on each pooled connection.
 * The name is derived from the text, so two statements can never share one. PGlite ignores it.
 */
export function executePrepared(db: DbOrTx, query: SQL): Promise<unknown> {
  const { dialect, session } = db as unknown as DrizzleInternals;
  const built = dialect.sqlToQuery(query);
  let name = names.get(built.sql);
  if (!name) names.set(built.sql, (name = `signet_${createHash('sha1').update(built.sql).digest('hex').slice(0, 16)}`));
  return session.prepareQuery(built, undefined, name, false).execute();
}

/**
 * Other modules' writes of the same change, placed as CTEs after a statement's own (`, c0 AS (…), c1 AS
 * (…)`): data-modifying CTEs run once and to completion whether or not the statement reads them.
 */
export const companionCtes = (also: SQL[]): SQL => sql.join(also.map((c, i) => sql`, ${sql.raw(`c${i}`)} AS (${c})`));
