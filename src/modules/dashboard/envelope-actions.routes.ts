import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { toAppError } from '../../http/errors.js';
import { confirmPage, DONE_NOTICES, type DoneNotice } from '../../web/dashboard/envelope-actions.js';
import { envelopeDetailPage } from '../../web/dashboard/envelopes.js';
import type { EnvelopesService } from '../envelopes/envelopes.service.js';
import type { RecipientLinks } from '../envelopes/recipient-links.js';
import type { SigningService } from '../signing/signing.service.js';
import { sessionContext } from './dashboard-http.js';
import type { DashboardSection } from './dashboard.routes.js';
import { ZMode, ZModeQuery } from './page-query.js';

const ZIdParam = z.object({ id: z.string().max(64) });
// As the API's {recipient}: a position (1, 2, …) or an email; the service says which is unknown.
const ZRecipientParam = z.object({ id: z.string().max(64), recipient: z.string().max(320) });

type Mode = 'live' | 'test';

/** The side a form acted on: its hidden `mode` field (a test envelope is only found in test mode). */
const modeOf = (request: FastifyRequest): Mode => ZMode.parse((request.body as Record<string, unknown> | undefined)?.mode);

const pageOf = (id: string, mode: Mode, done?: DoneNotice, who?: string) => {
  const q = new URLSearchParams({ ...(mode === 'test' && { mode }), ...(done && { done }), ...(who && { who }) }).toString();
  return `/dashboard/envelopes/${encodeURIComponent(id)}${q ? `?${q}` : ''}`;
};

/**
 * The sender's actions on one envelope: resend, cancel (after a confirmation page), revoke and reissue
 * one recipient's link (after a confirmation page), and a preview of the document as it stands. Each
 * goes through the service the API uses (same rules, same codes, same 404 for another customer's
 * envelope); a success redirects to the envelope with a notice (POST-redirect-GET: a reload repeats
 * nothing), a refusal is shown on the envelope's page with its code.
 */
export function envelopeActionsSection(deps: {
  db: Db;
  envelopes: Pick<EnvelopesService, 'get' | 'resend' | 'remindOutside' | 'remove' | 'openDownload'>;
  links: Pick<RecipientLinks, 'reissue'>;
  signing: Pick<SigningService, 'document'>;
  signingUrl: string;
}): DashboardSection {
  return (kit) => async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { dashboard: 'session' as const };

    /** A refusal, shown on the envelope's page (its own 404 stays the error page: there is no envelope to show). */
    async function refused(request: FastifyRequest, reply: FastifyReply, id: string, mode: Mode, err: unknown) {
      const appErr = toAppError(err);
      if (appErr.code === 'ENVELOPE_NOT_FOUND' || appErr.status >= 500 || appErr.status === 401) throw err;
      const envelope = await deps.envelopes.get(deps.db, sessionContext(request, mode), id);
      const body = envelopeDetailPage(envelope, mode, { csrf: kit.csrf.tokenFor(request, reply) });
      return kit.render(request, reply, { title: envelope.title ?? 'Untitled envelope', active: 'envelopes', body, status: appErr.status, flash: { kind: 'error', text: `${appErr.message} (${appErr.code})` } });
    }

    async function act(request: FastifyRequest, reply: FastifyReply, id: string, work: (mode: Mode) => Promise<{ done: DoneNotice; who?: string }>) {
      const mode = modeOf(request);
      try {
        const { done, who } = await work(mode);
        return reply.redirect(pageOf(id, mode, done, who), 303);
      } catch (err) {
        return refused(request, reply, id, mode, err);
      }
    }

    r.post('/dashboard/envelopes/:id/resend', { config, schema: { params: ZIdParam } }, async (request, reply) =>
      act(request, reply, request.params.id, async (mode) => {
        const ctx = sessionContext(request, mode);
        const reminded = await deps.envelopes.remindOutside(deps.db, ctx, request.params.id);
        const { resentTo } = await deps.db.transaction((tx) => deps.envelopes.resend(tx, ctx, request.params.id, reminded));
        return { done: resentTo.length ? 'resent' : 'nobody-to-remind' };
      }),
    );

    r.get('/dashboard/envelopes/:id/cancel', { config, schema: { params: ZIdParam, querystring: ZModeQuery } }, async (request, reply) => {
      const { mode } = request.query;
      const envelope = await deps.envelopes.get(deps.db, sessionContext(request, mode), request.params.id);
      const body = confirmPage({ kind: 'cancel', envelope, mode, csrf: kit.csrf.tokenFor(request, reply) });
      return kit.render(request, reply, { title: 'Cancel this envelope?', active: 'envelopes', body });
    });

    r.post('/dashboard/envelopes/:id/cancel', { config, schema: { params: ZIdParam } }, async (request, reply) =>
      act(request, reply, request.params.id, async (mode) => {
        await deps.db.transaction((tx) => deps.envelopes.remove(tx, sessionContext(request, mode), request.params.id));
        return { done: 'cancelled' };
      }),
    );

    r.get('/dashboard/envelopes/:id/recipients/:recipient/link', { config, schema: { params: ZRecipientParam, querystring: ZModeQuery } }, async (request, reply) => {
      const { mode } = request.query;
      const envelope = await deps.envelopes.get(deps.db, sessionContext(request, mode), request.params.id);
      const recipient = /^\d{1,3}$/.test(request.params.recipient) ? envelope.recipients[Number(request.params.recipient) - 1] : undefined;
      if (!recipient) throw new AppError('RECIPIENT_NOT_FOUND', `No recipient ${request.params.recipient} on this envelope`);
      const body = confirmPage({ kind: 'reissue', envelope, mode, csrf: kit.csrf.tokenFor(request, reply), recipient: { position: Number(request.params.recipient), name: recipient.name, email: recipient.email } });
      return kit.render(request, reply, { title: 'Reissue this link?', active: 'envelopes', body });
    });

    r.post('/dashboard/envelopes/:id/recipients/:recipient/link', { config, schema: { params: ZRecipientParam } }, async (request, reply) =>
      act(request, reply, request.params.id, async (mode) => {
        const done = await deps.db.transaction((tx) => deps.links.reissue(tx, sessionContext(request, mode), request.params.id, request.params.recipient));
        return { done: 'reissued', who: done.recipient.email };
      }),
    );

    r.get('/dashboard/envelopes/:id/preview', { config, schema: { params: ZIdParam, querystring: ZModeQuery } }, async (request, reply) => {
      const ctx = sessionContext(request, request.query.mode);
      const envelope = await deps.envelopes.get(deps.db, ctx, request.params.id);
      const { stream, size } = await previewOf(envelope, ctx);
      const filename = `${envelope.envelopeId}-preview.pdf`;
      // Inline: the browser's own PDF viewer shows it in a new tab; never cached (no-store is the dashboard's default).
      return reply.type('application/pdf').header('content-disposition', `inline; filename="${filename}"`).header('content-length', size).send(stream);
    });

    /**
     * The document as it stands: a draft's upload, a completed envelope's sealed PDF, and in between
     * what the recipients see (no marker text, the values of those who acted: document-views.ts),
     * read through a recipient's link as the signing page reads it.
     */
    async function previewOf(envelope: Awaited<ReturnType<EnvelopesService['get']>>, ctx: ReturnType<typeof sessionContext>) {
      if (envelope.status === 'DRAFT') return deps.envelopes.openDownload(deps.db, ctx, envelope.envelopeId, 'original');
      if (envelope.status === 'COMPLETED') return deps.envelopes.openDownload(deps.db, ctx, envelope.envelopeId, 'signed');
      const prefix = `${deps.signingUrl}/`;
      const link = envelope.recipients.map((x) => x.signingUrl).find((u) => u?.startsWith(prefix));
      // A remote engine keeps its links (and its views) itself: its upload is what we can show.
      if (!link) return deps.envelopes.openDownload(deps.db, ctx, envelope.envelopeId, 'original');
      return deps.signing.document(link.slice(prefix.length), { asSender: true });
    }
  };
}

export { DONE_NOTICES };
