/**
 * Worker-thread entry that parses untrusted uploads for prepareDocument (see sandbox.ts and
 * worker-main.ts): one job at a time, answered by id. Refusals travel back as {code, message}; the
 * parent rethrows them.
 */
import { prepareInProcess } from './document.js';
import { serveJobs } from './worker-main.js';

await serveJobs({
  subject: 'The PDF',
  async run(input) {
    const result = await prepareInProcess(input as Uint8Array[]);
    return { result, bytes: result.bytes };
  },
  unexpected: (detail) => ({ code: 'INVALID_PDF', message: `The PDF could not be read (${detail.slice(0, 160)})` }),
});
