import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';

/** samples/ at the repository root: the same two levels up from src/modules/samples and dist/modules/samples. */
const SAMPLES_DIR = path.resolve(import.meta.dirname, '..', '..', '..', 'samples');

/**
 * GET /samples/nda.pdf: the NDA README's first envelope sends (two `{{signature, rN}}` markers), so a
 * newcomer's first create needs no PDF of their own. Read once at start (6 KB); public, no credential.
 */
export function samplesRoutes() {
  return async function register(app: FastifyInstance) {
    const nda = readFileSync(path.join(SAMPLES_DIR, 'nda.pdf'));
    app.get('/samples/nda.pdf', { schema: { hide: true } }, async (_request, reply) =>
      reply.type('application/pdf').header('cache-control', 'public, max-age=86400').header('content-disposition', 'inline; filename="nda.pdf"').send(nda),
    );
  };
}
