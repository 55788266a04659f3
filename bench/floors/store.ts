/**
 * The floors' database: a pg Pool of Signet's size on the schema the connection string selects
 * (FLOOR_DATABASE_URL), or a file-backed PGlite in FLOOR_DATA_DIR, as Signet would use either.
 */
import path from 'node:path';

export type FloorStore = {
  query<R>(text: string, params?: unknown[]): Promise<R[]>;
  /** BEGIN; the statements; COMMIT — on one connection. */
  transaction(statements: { text: string; params: unknown[] }[]): Promise<void>;
  close(): Promise<void>;
};

export async function openFloorStore(): Promise<FloorStore> {
  const url = process.env.FLOOR_DATABASE_URL;
  if (url) {
    const pg = (await import('pg')).default;
    const pool = new pg.Pool({ connectionString: url, max: Number(process.env.FLOOR_POOL_SIZE || 10) });
    return {
      query: async <R>(text: string, params: unknown[] = []) => (await pool.query(text, params)).rows as R[],
      async transaction(statements) {
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          for (const s of statements) await client.query(s.text, s.params);
          await client.query('COMMIT');
        } catch (err) {
          await client.query('ROLLBACK').catch(() => {});
          throw err;
        } finally {
          client.release();
        }
      },
      close: () => pool.end(),
    };
  }
  const { PGlite } = await import('@electric-sql/pglite');
  const db = await PGlite.create(path.join(process.env.FLOOR_DATA_DIR!, 'pglite'));
  return {
    query: async <R>(text: string, params: unknown[] = []) => (await db.query<R>(text, params)).rows,
    async transaction(statements) {
      await db.transaction(async (tx) => {
        for (const s of statements) await tx.query(s.text, s.params);
      });
    },
    close: () => db.close(),
  };
}

/** Closes the server and the store on SIGTERM, then exits (the bench stops floors this way). */
export function exitOnSigterm(close: () => Promise<void>): void {
  process.once('SIGTERM', () => {
    close().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  });
}
