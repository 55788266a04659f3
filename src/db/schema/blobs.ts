import { bigint, customType, index, integer, pgTable, primaryKey, timestamp, uuid } from 'drizzle-orm/pg-core';

const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => 'bytea' });
/**
 * Blob keys compare byte by byte whatever the database's locale, so `key >= prefix AND key < next`
 * is a range of the primary key's index (a prefix listing reads only its own keys).
 */
const blobKey = customType<{ data: string }>({ dataType: () => 'text COLLATE "C"' });

/**
 * Documents kept in the database (STORAGE_DRIVER=postgres): one row per key naming the generation
 * readers see. A write stores a new generation's chunks first, then points the key at it in one
 * short transaction that also deletes the previous generation's chunks: readers see old or new bytes.
 */
export const blobs = pgTable('blobs', {
  key: blobKey('key').primaryKey(),
  generation: uuid('generation').notNull(),
  size: bigint('size', { mode: 'number' }).notNull(),
  modifiedAt: timestamp('modified_at', { withTimezone: true }).notNull().defaultNow(),
});

/** A generation's bytes in order, at most one chunk size each: no file is ever one value or one parameter. */
export const blobChunks = pgTable(
  'blob_chunks',
  {
    generation: uuid('generation').notNull(),
    seq: integer('seq').notNull(),
    data: bytea('data').notNull(),
  },
  (t) => [primaryKey({ columns: [t.generation, t.seq] })],
);

/**
 * A generation being written: the row lives from before its first chunk until the transaction that
 * publishes it. One left behind (its writer died) marks chunks nobody will read; the store collects them.
 */
export const blobUploads = pgTable(
  'blob_uploads',
  {
    generation: uuid('generation').primaryKey(),
    key: blobKey('key').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('blob_uploads_started_idx').on(t.startedAt)],
);
