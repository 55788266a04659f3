import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { defineJob } from '../../jobs/worker.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import type { LocalEngineRepo } from './local-engine.repo.js';
import { documentKey, progressKey, PURGE_DOCUMENT_JOB } from './local-engine.js';

/**
 * A purged document's files, deleted after the purge committed (the purge only queues this): a store
 * is never called inside a transaction, because a database-backed store needs a connection of its own
 * (PGlite has one) and a remote one would hold the transaction's locks across the network. Every
 * version of the document as it stands (one per recipient who acted), and whatever else lies under the
 * document's prefix (a refused signature's image) and signers' attachments: nothing of it outlives the purge. Deleting a missing
 * key is no error, so the job is safe to run twice.
 */
export const purgeDocumentJob = (deps: { db: Db; repo: Pick<LocalEngineRepo, 'document' | 'recipients' | 'attachments'>; storage: BlobStorage }) =>
  defineJob({
    type: PURGE_DOCUMENT_JOB,
    payload: z.object({ documentId: z.guid() }),
    async handle({ documentId }) {
      const doc = await deps.repo.document(deps.db, documentId);
      if (!doc) return;
      const [recipients, attachments] = await Promise.all([deps.repo.recipients(deps.db, doc.id), deps.repo.attachments(deps.db, doc.id)]);
      // Signers' attachments too: a store without listing would otherwise keep them.
      const keys = new Set([doc.originalKey, doc.signedKey, ...recipients.map((r) => r.signature?.imageKey), ...attachments.map((a) => a.blobKey)].filter((k): k is string => Boolean(k)));
      for (let acted = 0; acted <= recipients.length; acted++) keys.add(progressKey(doc.id, acted));
      if (deps.storage.list) for await (const blob of deps.storage.list(documentKey(doc.id, ''))) keys.add(blob.key);
      for (const key of keys) await deps.storage.delete(key);
    },
  });
