import { createHash } from 'node:crypto';
import { sql, type SQL } from 'drizzle-orm';
import type { DbOrTx } from './client.js';
import { compileRowMapper, type SelectedField } from './row-mapper.js';

/** What a built prepared query holds that does not depend on its executor (drizzle's PgPreparedQuery, internals). */
type BuiltQuery = {
  queryString: string;
  params: unknown[];
  fields?: unknown;
  _isResponseInArrayMode?: boolean;
  customResultMapper?: unknown;
  joinsNotNullableMap?: unknown;
  queryMetadata?: unknown;
  cacheConfig?: unknown;
  rawQueryConfig?: { name?: string };
};
type Session = { prepareQuery(query: { sql: string; params: unknown[] }, fields: unknown, name: string | undefined, arrayMode: boolean | undefined, mapper: unknown, metadata: unknown, cacheConfig: unknown): BuiltQuery };

/**
 * Memoizes a prepared statement: drizzle then skips building the SQL and PostgreSQL skips planning it,
 * which is most of a hot read's cost, and its rows are mapped by a mapper compiled once (row-mapper.ts). Built once per process (per driver) and bound to each executor
 * (the pool, or a transaction while it lives) from its text and parameters: a job's statements run in
 * a new transaction each time, and building them again there cost more than running them. Build it
 * with `sql.placeholder` only (a value inlined at build time would be the first call's for ever) and
 * a statement name unique in the process.
 */
export function preparedPer<T>(build: (db: DbOrTx) => T): (db: DbOrTx) => T {
  const cache = new WeakMap<DbOrTx, T>();
  // By the session's class: the process may hold a PGlite and a PostgreSQL executor (each binds its own).
  const built = new Map<object, BuiltQuery>();
  return (db) => {
    let stmt = cache.get(db);
    if (stmt) return stmt;
    const session = (db as unknown as { session: Session }).session;
    const kind = Object.getPrototypeOf(session) as object;
    const first = built.get(kind);
    if (!first) {
      stmt = build(db);
      const query = stmt as BuiltQuery;
      // Its rows mapped by a mapper worked out once (row-mapper.ts); the executors bound below share it.
      if (Array.isArray(query.fields) && !query.customResultMapper) query.customResultMapper = compileRowMapper(query.fields as SelectedField[], query.joinsNotNullableMap as Record<string, boolean> | undefined);
      built.set(kind, query);
    } else {
      const bound = session.prepareQuery({ sql: first.queryString, params: first.params }, first.fields, first.rawQueryConfig?.name, first._isResponseInArrayMode, first.customResultMapper, first.queryMetadata, first.cacheConfig);
      bound.joinsNotNullableMap = first.joinsNotNullableMap;
      stmt = bound as T;
    }
    cache.set(db, stmt);
    return stmt;
  };
}

type DrizzleInternals = {
  dialect: { sqlToQuery(query: SQL): { sql: string; params: unknown[] } };
  session: { prepareQuery(query: { sql: string; params: unknown[] }, fields: undefined, name: string, arrayMode: false): { execute(values?: Record<string, unknown>): Promise<unknown> } };
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
  return session.prepareQuery(built, undefined, nameOf(built.sql), false).execute();
}

function nameOf(text: string): string {
  let name = names.get(text);
  if (!name) names.set(text, (name = `signet_${createHash('sha1').update(text).digest('hex').slice(0, 16)}`));
  return name;
}

/**
 * executePrepared for a raw statement whose text depends only on `key` (its values are
 * `sql.placeholder`s, given on each run): built once per process and key, so a statement run after
 * every wake-up (the worker's claim) is neither built by drizzle nor planned again.
 */
export function preparedSql(build: (key: string) => SQL): (db: DbOrTx, key: string, values: Record<string, unknown>) => Promise<unknown> {
  const built = new Map<string, { query: { sql: string; params: unknown[] }; name: string }>();
  return (db, key, values) => {
    const { dialect, session } = db as unknown as DrizzleInternals;
    let b = built.get(key);
    if (!b) {
      const query = dialect.sqlToQuery(build(key));
      built.set(key, (b = { query, name: nameOf(query.sql) }));
    }
    return session.prepareQuery(b.query, undefined, b.name, false).execute(values);
  };
}

/**
 * Other modules' writes of the same change, placed as CTEs after a statement's own (`, c0 AS (…), c1 AS
 * (…)`): data-modifying CTEs run once and to completion whether or not the statement reads them.
 */
export const companionCtes = (also: SQL[]): SQL => sql.join(also.map((c, i) => sql`, ${sql.raw(`c${i}`)} AS (${c})`));
