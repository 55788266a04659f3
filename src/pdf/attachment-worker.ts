/**
 * Worker-thread entry that checks signers' attachments for checkAttachment (see attachment-sandbox.ts
 * and worker-main.ts): the uploaded file is read here, so the parent thread never holds it, and
 * decoded under the decode guard. Refusals travel back as {code, message}.
 */
import { readFile } from 'node:fs/promises';
import { checkAttachmentInProcess, type AttachmentCheckJob } from './attachment-check.js';
import { serveJobs } from './worker-main.js';

await serveJobs({
  subject: 'The attachment',
  async run(input) {
    const job = input as AttachmentCheckJob;
    const bytes = job.file ? new Uint8Array(await readFile(job.file)) : job.bytes!;
    return { result: await checkAttachmentInProcess(bytes, job.claimed, job.maxPages) };
  },
  unexpected: (detail) => ({ code: 'ATTACHMENT_INVALID', message: `The attachment could not be read (${detail.slice(0, 160)})` }),
});
