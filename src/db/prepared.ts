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
