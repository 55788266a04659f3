/**
 * Worker-thread entry that renders the document as it stands for renderInSandbox (see
 * render-sandbox.ts and worker-main.ts): the prepared upload and recipients' signature images are
 * decoded here, with the same decode bounds as the parsing and sealing workers, never on the main thread.
 */
import { renderDocument, type StampInput } from './seal.js';
import { serveJobs } from './worker-main.js';

await serveJobs({
  subject: 'The document',
  async run(input) {
    const bytes = await renderDocument(input as StampInput);
    return { result: bytes, bytes };
  },
  unexpected: (detail) => ({ code: 'INTERNAL_ERROR', message: `Rendering the document failed: ${detail.slice(0, 200)}` }),
});
