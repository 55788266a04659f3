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
const DOCUMENT_KEY = /^documents\/([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})\//;

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
 * Removes every blob under documents/ older than BLOB_GRACE_MS that no row references. Keys of any
 * other shape are left alone: the sweep deletes only what it can prove unreferenced. Safe to run twice.
 */
export const blobSweepJob = (deps: { db: Db; repo: LocalEngineRepo; storage: BlobStorage }) =>
  defineJob({
    type: BLOB_SWEEP_JOB,
    payload: z.object({}),
    async handle() {
      const cutoff = Date.now() - BLOB_GRACE_MS;
      let batch: { key: string; documentId: string }[] = [];
      const sweep = async () => {
        const referenced = await deps.repo.referencedBlobKeys(deps.db, [...new Set(batch.map((b) => b.documentId))]);
        for (const { key } of batch) if (!referenced.has(key)) await deps.storage.delete(key);
        batch = [];
      };
      if (!deps.storage.list) return;
      for await (const blob of deps.storage.list('documents/')) {
        const m = DOCUMENT_KEY.exec(blob.key);
        if (!m || blob.modifiedAt.getTime() > cutoff) continue;
        batch.push({ key: blob.key, documentId: m[1] });
        if (batch.length >= BATCH) await sweep();
      }
      if (batch.length > 0) await sweep();
    },
  });
