import { randomUUID } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { and, asc, eq, gt, gte, inArray, lt, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/client.js';
import { blobChunks, blobs, blobUploads } from '../../db/schema/index.js';
import { assertBlobKey, type BlobStorage, type StoredBlob } from './blob-storage.js';

/** Bytes per chunk row: big enough that a 25 MB file is a hundred rows, small enough to hold a few at once. */
export const POSTGRES_CHUNK_BYTES = 256 * 1024;
/** Keys per page of a listing. */
const LIST_PAGE = 500;
/** An upload not published after this was abandoned by its writer (a put takes seconds): its chunks are collected. */
const ABANDONED_AFTER = sql`interval '1 hour'`;

/** A view of the driver's answer as a Buffer, without copying (node-postgres gives Buffers, PGlite Uint8Arrays). */
const asBuffer = (data: Uint8Array) => (Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength));

/** Chunks of `bytes` as views into it: no copy of the whole. */
function* slices(bytes: Uint8Array): Generator<Uint8Array> {
  for (let at = 0; at < bytes.byteLength; at += POSTGRES_CHUNK_BYTES) yield bytes.subarray(at, at + POSTGRES_CHUNK_BYTES);
}

/** The first string after every string starting with `prefix` (keys are ASCII and compare bytewise). */
const upperBound = (prefix: string) => prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);

/**
 * Documents in the database itself (STORAGE_DRIVER=postgres): every node that reaches the database
 * reaches the documents, with nothing else to run. Bytes move in POSTGRES_CHUNK_BYTES rows, one
 * statement each, so neither a write nor a streamed read ever holds a whole file or a transaction
 * across the caller's work (on PGlite a held transaction would stop every other query).
 *
 * Atomic for readers: a write stores a new generation's chunks under a generation id no reader
 * knows, then one short transaction points the key at it and deletes the previous generation's
 * chunks. get() reads the key and its chunks in one statement (one snapshot); a stream reads chunk
 * by chunk and ends with an error, never with other bytes, if its generation is replaced meanwhile.
 */
export function createPostgresStorage(db: Db): BlobStorage & { check(): Promise<void> } {
  /** Stores the chunks of a new generation, then publishes it; on failure removes what it stored. */
  async function write(key: string, chunks: () => AsyncIterable<Uint8Array> | Iterable<Uint8Array>): Promise<void> {
    assertBlobKey(key);
    const generation = randomUUID();
    await db.insert(blobUploads).values({ generation, key });
    try {
      let seq = 0;
      let size = 0;
      // Opened only once the key is known good and the upload recorded; leaving the loop closes it.
      for await (const data of chunks()) {
        if (data.byteLength === 0) continue;
        await db.insert(blobChunks).values({ generation, seq: seq++, data });
        size += data.byteLength;
      }
      await publish(key, generation, size);
    } catch (err) {
      await discard(generation).catch(() => {});
      throw err;
    }
  }

  async function publish(key: string, generation: string, size: number): Promise<void> {
    await db.transaction(async (tx) => {
      // Collected as abandoned meanwhile (a writer stalled past ABANDONED_AFTER): its chunks are gone.
      const [upload] = await tx.delete(blobUploads).where(eq(blobUploads.generation, generation)).returning({ generation: blobUploads.generation });
      if (!upload) throw new Error(`blob ${key}: the upload was collected as abandoned before it was published`);
      let previous: string | undefined;
      // Replace the row under its lock, or insert it; a concurrent first write of the key makes the
      // insert find a conflict, and the next pass locks the row that write committed.
      for (;;) {
        const [current] = await tx.select({ generation: blobs.generation }).from(blobs).where(eq(blobs.key, key)).for('update');
        if (current) {
          previous = current.generation;
          await tx.update(blobs).set({ generation, size, modifiedAt: sql`now()` }).where(eq(blobs.key, key));
          break;
        }
        const inserted = await tx.insert(blobs).values({ key, generation, size }).onConflictDoNothing().returning({ key: blobs.key });
        if (inserted.length > 0) break;
      }
      if (previous) await tx.delete(blobChunks).where(eq(blobChunks.generation, previous));
    });
  }

  /**
   * Deletes the uploads `which` selects and their chunks in one statement. Only an upload still
   * unpublished: a publish whose commit reached the database though its caller saw an error has
   * deleted its upload row, and its chunks are a readable blob's.
   */
  async function discardUploads(which: SQL): Promise<void> {
    await db.execute(sql`WITH gone AS (DELETE FROM ${blobUploads} WHERE ${which} RETURNING ${blobUploads.generation})
      DELETE FROM ${blobChunks} WHERE ${blobChunks.generation} IN (SELECT generation FROM gone)`);
  }
  const discard = (generation: string) => discardUploads(sql`${blobUploads.generation} = ${generation}`);
  /** The chunks of uploads whose writer died before publishing them (nothing else can reach them). */
  const collectAbandoned = () => discardUploads(sql`${blobUploads.startedAt} < now() - ${ABANDONED_AFTER}`);

  async function header(key: string) {
    assertBlobKey(key);
    const [row] = await db.select({ generation: blobs.generation, size: blobs.size }).from(blobs).where(eq(blobs.key, key));
    return row;
  }

  return {
    put: (key, bytes) => write(key, () => slices(bytes)),

    // Read as a stream in chunk-sized pieces: the file is never in memory. A moved file is left for
    // its owner to remove, as the interface allows.
    putFile: (key, file) => write(key, () => createReadStream(file, { highWaterMark: POSTGRES_CHUNK_BYTES })),

    async get(key) {
      assertBlobKey(key);
      const rows = await db
        .select({ size: blobs.size, data: blobChunks.data })
        .from(blobs)
        .leftJoin(blobChunks, eq(blobChunks.generation, blobs.generation))
        .where(eq(blobs.key, key))
        .orderBy(asc(blobChunks.seq));
      if (rows.length === 0) return undefined;
      const bytes = Buffer.concat(rows.flatMap((r) => (r.data ? [asBuffer(r.data)] : [])));
      if (bytes.byteLength !== rows[0].size) throw new Error(`blob ${key}: ${bytes.byteLength} bytes stored, ${rows[0].size} expected`);
      return bytes;
    },

    async getStream(key) {
      const found = await header(key);
      if (!found) return undefined;
      const { generation, size } = found;
      async function* chunks() {
        let read = 0;
        for (let seq = 0; read < size; seq++) {
          const [chunk] = await db
            .select({ data: blobChunks.data })
            .from(blobChunks)
            .where(and(eq(blobChunks.generation, generation), eq(blobChunks.seq, seq)));
          if (!chunk) throw new Error(`blob ${key} was replaced or deleted while it was read`);
          read += chunk.data.byteLength;
          yield asBuffer(chunk.data);
        }
      }
      // A byte stream pulls the next chunk only once the reader took the last one.
      return { stream: Readable.from(chunks(), { objectMode: false }), size };
    },

    async delete(key) {
      assertBlobKey(key);
      await db.transaction(async (tx) => {
        const gone = await tx.delete(blobs).where(eq(blobs.key, key)).returning({ generation: blobs.generation });
        if (gone.length > 0) await tx.delete(blobChunks).where(inArray(blobChunks.generation, gone.map((g) => g.generation)));
      });
    },

    /** Key by key in pages (no transaction or cursor held between them); the sweep's walk also collects abandoned uploads. */
    async *list(prefix): AsyncIterable<StoredBlob> {
      const segments = prefix.split('/').filter(Boolean);
      if (segments.length > 0) assertBlobKey(segments.join('/'));
      await collectAbandoned();
      const range = prefix === '' ? [] : [gte(blobs.key, prefix), lt(blobs.key, upperBound(prefix))];
      let after: string | undefined;
      for (;;) {
        const page = await db
          .select({ key: blobs.key, modifiedAt: blobs.modifiedAt })
          .from(blobs)
          .where(and(...range, after === undefined ? undefined : gt(blobs.key, after)))
          .orderBy(asc(blobs.key))
          .limit(LIST_PAGE);
        yield* page;
        if (page.length < LIST_PAGE) return;
        after = page[page.length - 1].key;
      }
    },

    async check() {
      await db.select({ key: blobs.key }).from(blobs).limit(1);
    },
  };
}
