import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import type { EnvelopeSync } from './envelope-sync.js';

/**
 * Documenso's webhook body: only what says which envelope to look at; the rest is not trusted.
 * Documenso names the envelope by its legacy numeric id (`payload.id`, the secondaryId's number);
 * an `envelopeId`, when a version sends one, is used first.
 */
const ZDocumensoWebhook = z.object({
  event: z.string().min(1).max(100),
  payload: z.object({ id: z.number().int().nonnegative(), envelopeId: z.string().min(1).max(100).optional() }).loose(),
  createdAt: z.string().optional(),
  webhookEndpoint: z.string().optional(),
});

/** Both sides hashed first, so the comparison takes the same time whatever the lengths. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (v: string) => createHash('sha256').update(v).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * POST /engine/documenso/webhook: Documenso's webhook (SIGNING_ENGINE=documenso only), registered in
 * Documenso with the secret it sends as X-Documenso-Secret. An inbound callback: internal, not in the
 * OpenAPI. The body only says "look": the envelope's live status is read from Documenso and applied
 * through the same locked sync as every other change, so a duplicate or out-of-order delivery changes
 * nothing (the stored copy is already in step) and a lost one is made good by the next status read.
 */
export function documensoWebhookRoutes(deps: {
  db: Db;
  secret: string;
  syncOutside: EnvelopeSync['syncOutside'];
  /** The engine envelope id of the Documenso envelope with this numeric id, if Signet holds it. */
  byNumericId: (db: Db, engineNumericId: string) => Promise<string | undefined>;
}) {
  return async function (app: FastifyInstance): Promise<void> {
    app.post('/engine/documenso/webhook', { schema: { hide: true }, bodyLimit: 1024 * 1024 }, async (request) => {
      const header = request.headers['x-documenso-secret'];
      const given = Array.isArray(header) ? header[0] : header;
      if (!given || !sameSecret(given, deps.secret)) throw new AppError('UNAUTHORIZED', 'X-Documenso-Secret is missing or wrong');
      const parsed = ZDocumensoWebhook.safeParse(request.body);
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new AppError('VALIDATION_ERROR', `body.${issue.path.join('.')}: ${issue.message}`, { details: [{ path: `body.${issue.path.join('.')}`, message: issue.message }] });
      }
      const { id, envelopeId: named } = parsed.data.payload;
      const envelopeId = named ?? (await deps.byNumericId(deps.db, String(id)));
      // Not an envelope of ours (another system on the same Documenso team): acknowledged, so Documenso stops retrying.
      // Documenso is read with no transaction open; the read is applied under the envelope's lock.
      const synced = envelopeId ? await deps.syncOutside(deps.db, envelopeId) : false;
      request.log.info({ event: parsed.data.event, engineNumericId: id, engineEnvelopeId: envelopeId, known: Boolean(synced) }, 'documenso webhook');
      return synced ? { received: true } : { received: true, ignored: true };
    });
  };
}
