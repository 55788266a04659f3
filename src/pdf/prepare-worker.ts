/**
 * Worker-thread entry that parses untrusted uploads for prepareDocument (see sandbox.ts and
 * worker-main.ts): one job at a time, answered by id. Refusals travel back as {code, message}; the
 * parent rethrows them.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { prepareInProcess } from './document.js';
import type { PrepareJob } from './prepare.js';
import type { PreparedDocument } from './types.js';
import { serveJobs } from './worker-main.js';

await serveJobs({
  subject: 'The PDF',
  async run(input) {
    const { parts, out } = input as PrepareJob;
    // Uploaded files are read here, so the parent thread never holds them.
    const { bytes, unchanged, ...found } = await prepareInProcess(await Promise.all(parts.map((p) => (typeof p === 'string' ? readFile(p) : p))));
    let result: PreparedDocument;
    if (unchanged && typeof parts[0] === 'string') result = { ...found, file: parts[0], size: bytes.length };
    else if (out) {
      await writeFile(out, bytes, { flag: 'wx', mode: 0o600 });
      result = { ...found, file: out, size: bytes.length };
    } else return { result: { ...found, bytes }, bytes };
    return { result };
  },
  unexpected: (detail) => ({ code: 'INVALID_PDF', message: `The PDF could not be read (${detail.slice(0, 160)})` }),
});
