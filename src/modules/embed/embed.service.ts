import type { RequestContext } from '../../context.js';
import type { Db, DbOrTx, Tx } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { LINK_TOKEN_PATTERN, createLinkTokens } from '../../lib/link-tokens.js';
import type { AuditService } from '../audit/audit.service.js';
import type { EnvelopesRepo } from '../envelopes/envelopes.repo.js';
import type { EmbedRepo } from './embed.repo.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** Long enough for the customer's page to load and frame it, short enough that a copy in a log is dead. */
export const EMBED_LINK_TTL_MS = 10 * 60_000;
const SIGNABLE = new Set(['PENDING', 'SENT', 'PARTIALLY_SIGNED']);

/**
 * Embed links (docs/embedding.md): a short-lived, single-use URL the customer's page frames, bound to
 * one recipient. Opening it shows the same signing page as the recipient's link, framable by the
 * account's allowed origins only; it grants nothing that link does not (the API shows that link on
 * every read already), it only lets it be framed.
 */
export function createEmbedService(deps: {
  db: Db;
  repo: EmbedRepo;
  envelopes: Pick<EnvelopesRepo, 'find' | 'recipients'>;
  /** The local engine's signing links; undefined with a remote engine, whose signing page is not ours. */
  signingUrlsOf?: (tx: DbOrTx, engineRecipientIds: string[]) => Promise<Map<string, string>>;
  audit: Pick<AuditService, 'customer'>;
  secret: string;
  publicUrl: string;
}) {
  const tokens = createLinkTokens(deps.secret, 'embed-link');

  return {
    async mint(tx: Tx, ctx: RequestContext, id: string, ref: string) {
      if (!deps.signingUrlsOf) throw new AppError('NOT_SUPPORTED_BY_ENGINE', 'The documenso signing engine serves its own signing page: it cannot be embedded from here');
      const envelope = UUID.test(id) ? await deps.envelopes.find(tx, id, { customerId: ctx.actor.customerId, mode: ctx.actor.mode }) : undefined;
      if (!envelope) throw new AppError('ENVELOPE_NOT_FOUND', 'No such envelope');
      if (envelope.status === 'DRAFT') throw new AppError('INVALID_STATE', 'The envelope is a DRAFT: send it first, then embed its recipients');
      if (!SIGNABLE.has(envelope.status) || envelope.expiresAt.getTime() <= Date.now()) {
        throw new AppError('ENVELOPE_NOT_ACTIVE', `The envelope is ${envelope.status === 'SENT' || envelope.status === 'PENDING' || envelope.status === 'PARTIALLY_SIGNED' ? 'expired' : envelope.status.toLowerCase()}; nothing more can be signed`);
      }
      const recipients = await deps.envelopes.recipients(tx, [envelope.id]);
      const recipient = /^\d{1,3}$/.test(ref) ? recipients.find((r) => r.position === Number(ref)) : recipients.find((r) => r.email.toLowerCase() === ref.toLowerCase());
      if (!recipient) throw new AppError('RECIPIENT_NOT_FOUND', `No recipient ${ref} on this envelope: name one by its position in recipients (1, 2, …) or its email`);
      if (recipient.status !== 'PENDING') throw new AppError('ALREADY_ACTED', `Recipient ${recipient.position} has already ${recipient.status === 'REJECTED' ? 'declined' : 'acted'}`);
      const token = tokens.token(tokens.newSalt());
      const expiresAt = new Date(Date.now() + EMBED_LINK_TTL_MS);
      await deps.repo.insert(tx, { customerId: ctx.actor.customerId, envelopeId: envelope.id, engineRecipientId: recipient.engineRecipientId, tokenHash: tokens.hash(token), expiresAt });
      await deps.audit.customer(tx, ctx, { action: 'envelope.embed_link', resourceType: 'envelope', resourceId: envelope.id, metadata: { recipient: recipient.position } });
      return { url: `${deps.publicUrl}/sign/embed/${token}`, expiresAt: expiresAt.toISOString(), envelopeId: envelope.id, recipientId: recipient.position };
    },

    /** The first open of a live link: whom it signs for and who may frame it; undefined for anything else. */
    async open(token: string) {
      if (!LINK_TOKEN_PATTERN.test(token) || !deps.signingUrlsOf) return undefined;
      const signingUrlsOf = deps.signingUrlsOf;
      return deps.db.transaction(async (tx) => {
        const link = await deps.repo.open(tx, tokens.hash(token));
        if (!link) return undefined;
        const signingUrl = (await signingUrlsOf(tx, [link.engineRecipientId])).get(link.engineRecipientId);
        if (!signingUrl) return undefined;
        return { signingToken: signingUrl.slice(signingUrl.lastIndexOf('/') + 1), allowedOrigins: link.allowedOrigins, envelopeId: link.envelopeId, recipientId: link.position };
      });
    },

    /** The accent of the account behind a recipient's signing token, for brand.css; null: Signet's own. */
    brandColorOf: (signingTokenHash: string) => deps.repo.brandColorOfToken(deps.db, signingTokenHash),
  };
}

export type EmbedService = ReturnType<typeof createEmbedService>;
