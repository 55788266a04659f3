import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { enqueue } from '../../jobs/queue.js';
import { defineJob, type PeriodicTask } from '../../jobs/worker.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import type { LocalEngineRepo } from './local-engine.repo.js';

export const BLOB_SWEEP_JOB = 'engine.sweep-blobs';

/** A blob younger than this may belong to a transaction still open: it is never collected. */
export const BLOB_GRACE_MS = 3_600_000;
/** How often the sweep walks the store (it reads every key, so not on every scheduler tick). */
const SWEEP_EVERY_MS = 10 * 60_000;
const BATCH = 500;
/** The owner's id: the first segment after the prefix. */
const OWNER_ID = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\//;

/**
 * Who owns the keys under a prefix: every key there is `<prefix><uuid>/…`, and `referenced` answers
 * which of the keys under the given uuids a committed row still points to. The engine owns
 * `documents/`; modules add their own prefixes (templates/) through the composition root.
 */
export type BlobOwner = { prefix: string; referenced: (db: Db, ids: string[]) => Promise<Set<string>> };

/** The engine's documents: originals, sealed PDFs and signature images under documents/<documentId>/. */
export const engineBlobOwner = (repo: Pick<LocalEngineRepo, 'referencedBlobKeys'>): BlobOwner => ({
  prefix: 'documents/',
  referenced: (db, ids) => repo.referencedBlobKeys(db, ids),
});

/**
 * Files are written before the row that references them commits (DESIGN §4.14): a create refused by
 * its charge, a signature whose request failed, a seal whose job crashed each leave one behind. The
 * periodic task queues at most one sweep per interval; the sweep runs as a job, outside any
 * transaction, because walking the store is disk I/O that must hold no connection (PGlite has one).
 */
export const blobSweepTask = (now: () => number = Date.now): PeriodicTask => ({
  name: 'queue-blob-sweep',
  run: (tx) => enqueue(tx, { type: BLOB_SWEEP_JOB, payload: {}, dedupeKey: `blob-sweep:${Math.floor(now() / SWEEP_EVERY_MS)}`, maxAttempts: 3 }),
});

/**
 * Removes every blob under an owner's prefix older than BLOB_GRACE_MS that no row references. Keys of
 * any other shape are left alone: the sweep deletes only what it can prove unreferenced. Safe to run twice.
 */
export const blobSweepJob = (deps: { db: Db; storage: BlobStorage; owners: BlobOwner[] }) =>
  defineJob({
    type: BLOB_SWEEP_JOB,
    payload: z.object({}),
    // It lists the whole store: a large bucket takes longer than the default deadline.
    timeoutMs: 60 * 60_000,
    async handle() {
      if (!deps.storage.list) return;
      const cutoff = Date.now() - BLOB_GRACE_MS;
      for (const owner of deps.owners) {
        let batch: { key: string; id: string }[] = [];
        const sweep = async () => {
          const referenced = await owner.referenced(deps.db, [...new Set(batch.map((b) => b.id))]);
          for (const { key } of batch) if (!referenced.has(key)) await deps.storage.delete(key);
          batch = [];
        };
        for await (const blob of deps.storage.list(owner.prefix)) {
          const m = blob.key.startsWith(owner.prefix) ? OWNER_ID.exec(blob.key.slice(owner.prefix.length)) : null;
          if (!m || blob.modifiedAt.getTime() > cutoff) continue;
          batch.push({ key: blob.key, id: m[1] });
          if (batch.length >= BATCH) await sweep();
        }
        if (batch.length > 0) await sweep();
      }
    },
  });
