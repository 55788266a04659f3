import { Column, SQL, Subquery, getTableName, is } from 'drizzle-orm';

/** A selected field as drizzle keeps it on a prepared select: where it goes in the row object, and what it is. */
export type SelectedField = { path: string[]; field: unknown };
type Decoder = { mapFromDriverValue(value: unknown): unknown };
type Slot = { path: string[]; last: string; decoder: Decoder; table: string | undefined };

/**
 * drizzle's mapResultRow, compiled once per statement. drizzle works out, on every row, what each field
 * is (a column, an SQL expression, a subquery: `is()` walks the class chain) and which table a joined
 * column belongs to, and walks each path through an iterator; for a read of one customer (18 columns)
 * that was about 10 µs a row, a sixth of the whole read's server CPU. None of it depends on the row:
 * here it is worked out when the statement is built, and a row costs its decoders. The result is the
 * same object, a left join whose columns are all null included (the whole object null, as drizzle
 * makes it unless the join is inner).
 */
export function compileRowMapper(fields: SelectedField[], joinsNotNullableMap: Record<string, boolean> | undefined): (rows: unknown[][]) => Record<string, unknown>[] {
  const slots: Slot[] = fields.map(({ path, field }) => ({
    path,
    last: path[path.length - 1],
    decoder: decoderOf(field),
    // drizzle nullifies only a column's object two levels deep (a joined table's selection).
    table: joinsNotNullableMap && is(field, Column) && path.length === 2 ? getTableName(field.table) : undefined,
  }));
  const mapRow = (row: unknown[]): Record<string, unknown> => {
    const result: Record<string, unknown> = {};
    const nullify: Record<string, string | false> | undefined = joinsNotNullableMap ? {} : undefined;
    for (let i = 0; i < slots.length; i++) {
      const { path, last, decoder, table } = slots[i];
      let node = result;
      for (let j = 0; j < path.length - 1; j++) {
        if (!(path[j] in node)) node[path[j]] = {};
        node = node[path[j]] as Record<string, unknown>;
      }
      const raw = row[i];
      const value = (node[last] = raw === null ? null : decoder.mapFromDriverValue(raw));
      if (table !== undefined) {
        const objectName = path[0];
        const seen = nullify![objectName];
        if (seen === undefined) nullify![objectName] = value === null ? table : false;
        else if (typeof seen === 'string' && seen !== table) nullify![objectName] = false;
      }
    }
    if (nullify) {
      for (const objectName in nullify) {
        const table = nullify[objectName];
        if (typeof table === 'string' && !joinsNotNullableMap![table]) result[objectName] = null;
      }
    }
    return result;
  };
  return (rows) => rows.map(mapRow);
}

/** drizzle's choice, in its order (SQL's `decoder` is internal: not in its types). */
function decoderOf(field: unknown): Decoder {
  if (is(field, Column)) return field;
  const sqlOf = (s: SQL) => (s as unknown as { decoder: Decoder }).decoder;
  if (is(field, SQL)) return sqlOf(field);
  if (is(field, Subquery)) return sqlOf((field as unknown as { _: { sql: SQL } })._.sql);
  return sqlOf((field as SQL.Aliased).sql);
}
