import type { RequestContext } from '../../context.js';
import type { DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { createLinkTokens, LINK_TOKEN_PATTERN } from '../../lib/link-tokens.js';
import type { AuditService } from '../audit/audit.service.js';
import type { EnvelopesRepo } from '../envelopes/envelopes.repo.js';
import type { PrepareLinksRepo } from './prepare-links.repo.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** How long a prepare link opens the editor: long enough to place fields, short enough that a leaked link soon dies. */
export const PREPARE_LINK_TTL_MS = 30 * 60 * 1000;

/**
 * Prepare links (POST /v1/envelopes/{id}/prepare-link): the editor for one draft, for a customer's own
 * app. The token is HMAC(SIGNING_LINK_SECRET, `prepare:<salt>`), never stored: a database copy opens
 * nothing. It authorizes only its draft's field routes and send (prepare-link-resolver.ts).
 */
export function createPrepareLinks(deps: { repo: PrepareLinksRepo; envelopes: Pick<EnvelopesRepo, 'find'>; audit: Pick<AuditService, 'customer'>; secret: string; publicUrl: string; now: () => Date }) {
  const tokens = createLinkTokens(deps.secret, 'prepare');
  return {
    async mint(tx: Tx, ctx: RequestContext, id: string) {
      const envelope = UUID.test(id) ? await deps.envelopes.find(tx, id, { customerId: ctx.actor.customerId, mode: ctx.actor.mode }, true) : undefined;
      if (!envelope) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
      if (envelope.status !== 'DRAFT') throw new AppError('ENVELOPE_NOT_DRAFT', `Only a DRAFT can be prepared; this envelope is ${envelope.status}`);
      const salt = tokens.newSalt();
      const token = tokens.token(salt);
      const expiresAt = new Date(deps.now().getTime() + PREPARE_LINK_TTL_MS);
      await deps.repo.insert(tx, { customerId: ctx.actor.customerId, mode: ctx.actor.mode, envelopeId: envelope.id, salt, tokenHash: tokens.hash(token), expiresAt });
      await deps.audit.customer(tx, ctx, { action: 'envelope.prepare_link', resourceType: 'envelope', resourceId: envelope.id, metadata: { expiresAt: expiresAt.toISOString() } });
      return { url: `${deps.publicUrl}/prepare/${token}`, expiresAt: expiresAt.toISOString() };
    },

    /** The link's draft and owner, or PREPARE_LINK_INVALID (unknown, expired, revoked, or its envelope sent). */
    async resolve(db: DbOrTx, token: string) {
      const link = LINK_TOKEN_PATTERN.test(token) ? await deps.repo.findLive(db, tokens.hash(token), deps.now()) : undefined;
      if (!link || link.envelopeStatus !== 'DRAFT') throw new AppError('PREPARE_LINK_INVALID', 'This prepare link is unknown, expired, or its envelope was sent: ask for a new link');
      return { customerId: link.customerId, mode: link.mode, envelopeId: link.envelopeId, expiresAt: link.expiresAt, allowedOrigins: link.allowedOrigins };
    },
  };
}

export type PrepareLinks = ReturnType<typeof createPrepareLinks>;
