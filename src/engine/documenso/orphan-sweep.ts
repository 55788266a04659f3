/**
 * Deletes Documenso drafts that Signet made but no envelope row holds. A create stages its DRAFT in
 * Documenso before Signet's transaction; when the transaction fails, discardStaged deletes it again,
 * but only best effort: Documenso down at that moment, or the process dying between Documenso's create
 * and the commit, leaves a draft nobody will send (it holds no signature and sends nothing; it only
 * clutters the team).
 *
 * What is deleted: a DOCUMENT in DRAFT whose externalId carries Signet's mark (`signet:`, MARK), created
 * more than the grace period ago by Documenso's clock, that no row of envelopes names. Anything unmarked
 * belongs to someone else on the team and is never touched; a Signet draft, or a create-and-send not yet
 * distributed, is held by its row and stays. The grace (an hour) covers a create still in flight (its
 * transaction commits seconds after the stage) and clock skew between Signet and Documenso. One Signet
 * installation per Documenso team: another's drafts are marked too, and this database holds none of them.
 *
 * How it runs: a periodic task queues one sweep job per SWEEP_EVERY_MS (as the blob sweep); the job
 * makes its Documenso calls outside any transaction (PGlite has one connection, and a periodic task's
 * transaction would hold it for the whole walk), asking the database one short statement per page.
 * Documenso unavailable is not an incident of the sweep's: the run stops, logs, and ends well (no dead
 * job, no operator alert; /health shows Documenso's circuit); the next interval's run picks it up.
 */
import { z } from 'zod';
import type { Db, DbOrTx } from '../../db/client.js';
import { enqueue } from '../../jobs/queue.js';
import { defineJob, type PeriodicTask } from '../../jobs/worker.js';
import { DocumensoCallError, type DocumensoClient } from './client.js';

export const DOCUMENSO_ORPHAN_SWEEP_JOB = 'engine.documenso-orphan-sweep';

/** A draft younger than this may belong to a create still in flight: it is never swept. */
export const ORPHAN_GRACE_MS = 3_600_000;
const SWEEP_EVERY_MS = 15 * 60_000;
const MARK_PREFIX = 'signet:';

export type OrphanSweepDeps = {
  db: Db;
  client: Pick<DocumensoClient, 'findEnvelopes' | 'deleteEnvelope'>;
  /** Which of these Documenso envelope ids a Signet row holds (envelopes.repo heldEngineEnvelopeIds). */
  heldOf: (db: DbOrTx, engineEnvelopeIds: string[]) => Promise<Set<string>>;
  log: { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };
  /** Milliseconds since the epoch (tests move it past the grace). */
  now?: () => number;
  graceMs?: number;
  /** Bounds of one run: pages read and drafts deleted. */
  perPage?: number;
  maxPages?: number;
  maxDeletions?: number;
};

export type OrphanSweepResult = {
  /** Pages of drafts read. */
  pages: number;
  /** Marked drafts past the grace that a row holds (kept). */
  held: number;
  deleted: number;
  /** Every draft past the grace was looked at (false: a bound or a failure stopped the run; the next one resumes). */
  complete: boolean;
  /** Why the run stopped early: Documenso's failure as Signet's code, or ALREADY_RUNNING (another run of this process is walking). */
  failed?: string;
};

export type OrphanSweep = { run(): Promise<OrphanSweepResult> };

export function createOrphanSweep(deps: OrphanSweepDeps): OrphanSweep {
  const now = deps.now ?? Date.now;
  const graceMs = deps.graceMs ?? ORPHAN_GRACE_MS;
  const perPage = deps.perPage ?? 100;
  const maxPages = deps.maxPages ?? 10;
  const maxDeletions = deps.maxDeletions ?? 500;
  // Where the last bounded run stopped: drafts Signet still holds pile up first (oldest first), so a run
  // that always began at page 1 could spend its pages on them and never reach an orphan behind.
  let resumeAt = 1;
  let running = false;

  async function walk(result: OrphanSweepResult): Promise<void> {
    const cutoff = now() - graceMs;
    // Documenso refused to delete these (a 4xx): not asked again in this run.
    const refused = new Set<string>();
    // A page read again after deletions shows the held ones again: counted once.
    const held = new Set<string>();
    let page = resumeAt;
    const start = page;
    try {
      while (result.pages < maxPages && result.deleted < maxDeletions) {
        const found = await deps.client.findEnvelopes({ type: 'DOCUMENT', status: 'DRAFT', page, perPage, orderByColumn: 'createdAt', orderByDirection: 'asc' });
        result.pages += 1;
        // Oldest first: the first draft inside the grace ends the walk.
        const old = found.data.filter((e) => Date.parse(e.createdAt) <= cutoff);
        const last = old.length < found.data.length || found.data.length < perPage;
        const marked = old.filter((e) => e.status === 'DRAFT' && e.deletedAt === null && e.externalId?.startsWith(MARK_PREFIX) && !refused.has(e.id));
        const holding = await deps.heldOf(deps.db, marked.map((e) => e.id));
        for (const id of holding) held.add(id);
        result.held = held.size;
        let deletedHere = 0;
        for (const e of marked.filter((m) => !holding.has(m.id))) {
          if (result.deleted >= maxDeletions) break;
          try {
            // False when it was gone already: gone either way, and off this page.
            await deps.client.deleteEnvelope(e.id);
            result.deleted += 1;
            deletedHere += 1;
          } catch (err) {
            if (!(err instanceof DocumensoCallError) || err.upstream.kind !== 'refused') throw err;
            refused.add(e.id);
            deps.log.warn({ engineEnvelopeId: e.id, status: err.upstream.status }, 'documenso: an orphaned draft could not be deleted');
          }
        }
        if (last && result.deleted < maxDeletions) {
          // From page 1 to the end: every draft past the grace was looked at.
          result.complete = start === 1;
          resumeAt = 1;
          return;
        }
        // What was deleted moved later drafts up onto this page: it is read again.
        if (deletedHere === 0) page += 1;
      }
      resumeAt = page;
    } catch (err) {
      if (!(err instanceof DocumensoCallError)) throw err;
      resumeAt = page;
      result.failed = err.code;
    }
  }

  return {
    async run() {
      const result: OrphanSweepResult = { pages: 0, held: 0, deleted: 0, complete: false };
      // A run still walking (a slow Documenso) is not joined by a second one in this process.
      if (running) return { ...result, failed: 'ALREADY_RUNNING' };
      running = true;
      try {
        await walk(result);
      } finally {
        running = false;
      }
      if (result.failed) deps.log.warn(result, 'documenso: orphaned-draft sweep stopped: Documenso is unavailable; the next run resumes');
      else deps.log.info(result, 'documenso: orphaned drafts swept');
      return result;
    },
  };
}

/** Queues at most one sweep per SWEEP_EVERY_MS across the cluster (the dedupe key names the interval). */
export const orphanSweepTask = (now: () => number = Date.now): PeriodicTask => ({
  name: 'queue-documenso-orphan-sweep',
  run: (tx) => enqueue(tx, { type: DOCUMENSO_ORPHAN_SWEEP_JOB, payload: {}, dedupeKey: `documenso-orphan-sweep:${Math.floor(now() / SWEEP_EVERY_MS)}`, maxAttempts: 3 }),
});

/** The sweep as a job: outside any transaction; safe to run twice (a draft already gone is not an error). */
export const orphanSweepJob = (sweep: OrphanSweep) =>
  defineJob({
    type: DOCUMENSO_ORPHAN_SWEEP_JOB,
    payload: z.object({}),
    handle: async () => void (await sweep.run()),
  });
