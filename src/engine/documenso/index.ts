import type { DocumensoConfig } from '../../config.js';
import type { Db, DbOrTx } from '../../db/client.js';
import type { JobDefinition, PeriodicTask } from '../../jobs/worker.js';
import { createDocumensoClient } from './client.js';
import { createDocumensoEngine, type DocumensoEngine } from './documenso-engine.js';
import { createOrphanSweep, orphanSweepJob, orphanSweepTask } from './orphan-sweep.js';

type Logger = { info(obj: object, msg: string): void; warn(obj: object, msg: string): void };

/**
 * SIGNING_ENGINE=documenso, assembled: the transport, the engine, and the sweep of drafts a failed
 * create left in Documenso (its delete failed too, or the process died), with its job and task.
 */
export function createDocumenso(deps: {
  config: DocumensoConfig;
  maxPdfBytes: number;
  db: Db;
  log: Logger;
  /** The envelopes repo's lookups: links are read by envelope, and the sweep keeps what a row holds. */
  envelopeIdsOfRecipients: (db: DbOrTx, engineRecipientIds: string[]) => Promise<string[]>;
  heldOf: (db: DbOrTx, engineEnvelopeIds: string[]) => Promise<Set<string>>;
  now: () => number;
}): { engine: DocumensoEngine; jobs: JobDefinition<any>[]; periodic: PeriodicTask[] } {
  const { config, log } = deps;
  // A signed PDF is the original plus signatures and a certificate page: far below four originals.
  const client = createDocumensoClient({ url: config.url, apiKey: config.apiKey, timeoutMs: config.timeoutMs, maxDownloadBytes: 4 * deps.maxPdfBytes, log });
  const engine = createDocumensoEngine({ client, webappUrl: config.webappUrl, envelopeIdsOfRecipients: deps.envelopeIdsOfRecipients, log });
  const sweep = createOrphanSweep({ db: deps.db, client, heldOf: deps.heldOf, log, now: deps.now });
  return { engine, jobs: [orphanSweepJob(sweep)], periodic: [orphanSweepTask()] };
}
