import { randomUUID } from 'node:crypto';
import { and, asc, eq, isNotNull, lt, sql } from 'drizzle-orm';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { engineDocuments, sealedDocumentVersions } from '../../db/schema/index.js';
import { enqueue } from '../../jobs/queue.js';
import type { SigningConfig } from '../../config-signing.js';
import { defineJob, type JobDefinition, type PeriodicTask } from '../../jobs/worker.js';
import { retimestampInSandbox, type SealOptions } from '../../pdf/seal-sandbox.js';
import { sha256Hex } from '../../lib/crypto.js';
import { timestampHorizon } from '../../pdf/seal-evidence.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import { documentKey } from './local-engine.js';

export const ARCHIVE_JOB = 'engine.archive-retimestamp';
/** Documents queued per scheduler tick: the jobs do the work, the tick only finds them. */
const BATCH = 50;

/**
 * Archival re-timestamping (SIGNING_ARCHIVE_RETIMESTAMP_DAYS, opt-in): a sealed document whose latest
 * timestamp's TSA certificate expires within the window gets a new document timestamp (with fresh
 * validation data), so its seal stays checkable after that certificate is gone. The periodic task
 * only queues one job per document version (deduplicated by the version's hash, so any number of
 * nodes and ticks queue it once); the job does the TSA call and the PDF work outside any transaction,
 * writes the new file under a key of its own, and swaps it in with one conditional UPDATE: a second
 * run, or a run racing another, finds the row moved on and removes only its own file.
 */
export function archivePeriodicTask(deps: { days: number }): PeriodicTask {
  return {
    name: 'archive-retimestamp',
    async run(tx) {
      const due = await tx
        .select({ id: engineDocuments.id, sealedSha256: engineDocuments.sealedSha256 })
        .from(engineDocuments)
        .where(
          and(
            eq(engineDocuments.status, 'COMPLETED'),
            isNotNull(engineDocuments.signedKey),
            lt(engineDocuments.archiveExpiresAt, sql`now() + (${deps.days}::int * interval '1 day')`),
            // Queued already (or dead, awaiting an operator): skipped, so they never crowd out the rest of the batch.
            sql`NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.dedupe_key = 'archive:' || ${engineDocuments.id} || ':' || ${engineDocuments.sealedSha256})`,
          ),
        )
        .orderBy(asc(engineDocuments.archiveExpiresAt))
        .limit(BATCH);
      await enqueue(tx, due.map((d) => ({ type: ARCHIVE_JOB, payload: { documentId: d.id }, dedupeKey: `archive:${d.id}:${d.sealedSha256}`, maxAttempts: 10 })));
    },
  };
}

export function archiveJob(deps: { db: Db; storage: BlobStorage; retimestamp: (sealed: Uint8Array, documentId: string) => Promise<Uint8Array>; days: number; timeoutMs?: number }) {
  return defineJob({
    type: ARCHIVE_JOB,
    payload: z.object({ documentId: z.guid() }),
    timeoutMs: deps.timeoutMs,
    async handle({ documentId }) {
      const [doc] = await deps.db
        .select({ signedKey: engineDocuments.signedKey, sealedSha256: engineDocuments.sealedSha256, archiveExpiresAt: engineDocuments.archiveExpiresAt, status: engineDocuments.status })
        .from(engineDocuments)
        .where(eq(engineDocuments.id, documentId));
      if (!doc?.signedKey || doc.status !== 'COMPLETED') return;
      // Done already (a second run, or another node's): its latest timestamp is no longer near expiry.
      if (!doc.archiveExpiresAt || doc.archiveExpiresAt.getTime() > Date.now() + deps.days * 86_400_000) return;
      const current = await deps.storage.get(doc.signedKey);
      if (!current) throw new Error(`sealed PDF of ${documentId} is missing`);
      const next = await deps.retimestamp(current, documentId);
      const horizon = timestampHorizon(next);
      // The same expiring TSA certificate again would extend nothing: fail (then dead, with an alert) so an operator configures a TSA whose certificate lasts.
      if (!horizon || (doc.archiveExpiresAt && horizon <= doc.archiveExpiresAt)) {
        throw new Error(`re-timestamping ${documentId} would not extend its verifiability: the TSA's certificate expires ${horizon?.toISOString() ?? '(unknown)'}, no later than the current timestamp's`);
      }
      const key = documentKey(documentId, `signed-${randomUUID()}.pdf`);
      await deps.storage.put(key, next);
      const sealedSha256 = sha256Hex(Buffer.from(next.buffer, next.byteOffset, next.byteLength));
      const swapped = await deps.db.transaction(async (tx) => {
        const rows = await tx
          .update(engineDocuments)
          .set({ signedKey: key, sealedSha256, archiveExpiresAt: horizon, updatedAt: sql`now()` })
          .where(and(eq(engineDocuments.id, documentId), eq(engineDocuments.signedKey, doc.signedKey!), eq(engineDocuments.status, 'COMPLETED')))
          .returning({ id: engineDocuments.id });
        if (rows.length === 0) return false;
        // The file it replaces stays recognisable by /verify-document (its blob goes to the sweep: no row references it).
        await tx.insert(sealedDocumentVersions).values({ documentId, sealedSha256: doc.sealedSha256! });
        return true;
      });
      if (!swapped) await deps.storage.delete(key);
    },
  });
}

/**
 * The archival pieces for the worker: the job whenever a TSA is configured (so jobs already queued can
 * finish after the setting is turned off), the periodic task only with SIGNING_ARCHIVE_RETIMESTAMP_DAYS.
 */
export function archival(deps: { db: Db; storage: BlobStorage; signing: SigningConfig; limits: SealOptions }): { jobs: JobDefinition<{ documentId: string }>[]; periodic: PeriodicTask[] } {
  const { tsa, archiveRetimestampDays: days, revocationTimeoutMs } = deps.signing;
  if (!tsa) return { jobs: [], periodic: [] };
  const retimestamp = (sealed: Uint8Array, owner: string) => retimestampInSandbox({ sealed, tsa: { urls: tsa.urls, headers: tsa.headers, timeoutMs: tsa.timeoutMs }, revocationTimeoutMs }, { ...deps.limits, owner });
  return {
    jobs: [archiveJob({ db: deps.db, storage: deps.storage, retimestamp, days: days ?? 0, timeoutMs: deps.limits.timeoutMs + 60_000 })],
    periodic: days ? [archivePeriodicTask({ days })] : [],
  };
}
