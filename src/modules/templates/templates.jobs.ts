import { z } from 'zod';
import type { BlobOwner } from '../../engine/local/blob-sweep.js';
import { defineJob } from '../../jobs/worker.js';
import type { BlobStorage } from '../../providers/storage/index.js';
import type { TemplatesRepo } from './templates.repo.js';

export const DELETE_DOCUMENT_JOB = 'template.delete-document';

/** A deleted template's PDF, removed after the delete committed. Deleting a missing key is no error: safe to run twice. */
export const deleteDocumentJob = (deps: { storage: Pick<BlobStorage, 'delete'> }) =>
  defineJob({
    type: DELETE_DOCUMENT_JOB,
    payload: z.object({ key: z.string().regex(/^templates\/[0-9a-f-]{36}\/[A-Za-z0-9_.-]+$/) }),
    handle: ({ key }) => deps.storage.delete(key),
  });

/** The blob sweep's view of templates/: a PDF stored for a create that never committed is collected. */
export const templateBlobOwner = (repo: Pick<TemplatesRepo, 'referencedBlobKeys'>): BlobOwner => ({
  prefix: 'templates/',
  referenced: (db, ids) => repo.referencedBlobKeys(db, ids),
});
