/**
 * Worker-thread entry that parses untrusted uploads for prepareDocument (see sandbox.ts and
 * worker-main.ts): one job at a time, answered by id. Refusals travel back as {code, message}; the
 * parent rethrows them.
 */
import { open, readFile } from 'node:fs/promises';
import { prepareInProcess } from './document.js';
import type { PrepareJob } from './prepare.js';
import type { PreparedDocument } from './types.js';
import { serveJobs } from './worker-main.js';

await serveJobs({
  subject: 'The PDF',
  async run(input) {
    const { parts } = input as PrepareJob;
    // Uploaded files are read here, so the parent thread never holds them.
    const { bytes, unchanged, ...found } = await prepareInProcess(await Promise.all(parts.map((p) => (typeof p === 'string' ? readFile(p) : p))));
    let result: PreparedDocument;
    const file = parts.find((p) => typeof p === 'string');
    if (unchanged && typeof parts[0] === 'string') result = { ...found, file: parts[0], size: bytes.length };
    else if (file) {
      // Every part is read: the first uploaded file becomes the document (see prepareDocument).
      await rewrite(file, bytes);
      result = { ...found, file, size: bytes.length };
    } else return { result: { ...found, bytes }, bytes };
    return { result };
  },
  unexpected: (detail) => ({ code: 'INVALID_PDF', message: `The PDF could not be read (${detail.slice(0, 160)})` }),
});

/** Replaces the file's content; 'r+' never creates it, so a file its request already removed stays removed. */
async function rewrite(file: string, bytes: Uint8Array): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.writeFile(bytes);
    await handle.truncate(bytes.length);
  } finally {
    await handle.close();
  }
}
