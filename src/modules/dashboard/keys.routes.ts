import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { keysPage, type KeysView } from '../../web/dashboard/keys.js';
import type { ApiKeyCache } from '../account/api-key-cache.js';
import { MAX_ACTIVE_KEYS, type ApiKeysService } from '../account/api-keys.service.js';
import { sessionContext } from './dashboard-http.js';
import type { DashboardPage, DashboardSection } from './dashboard.routes.js';

/** ?revoked=<key id> after a revocation: the notice names the key by its prefix, looked up, never echoed. */
const ZKeysQuery = z.object({ revoked: z.string().max(64).optional().catch(undefined), labelled: z.string().max(64).optional().catch(undefined) });

/**
 * GET /dashboard/keys; POST /dashboard/keys mints a key and shows it this once (the page is rendered
 * in the POST's answer, never stored, and no-store keeps it out of caches); POST
 * /dashboard/keys/:id/revoke revokes and sends the browser back with a notice.
 */
export function keysSection(deps: { db: Db; apiKeys: Pick<ApiKeysService, 'list' | 'mint' | 'revoke' | 'relabel'>; apiKeyCache: Pick<ApiKeyCache, 'evict'>; publicUrl: string }): DashboardSection {
  return (kit) => async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { dashboard: 'session' as const };

    async function render(request: FastifyRequest, reply: FastifyReply, extra: Pick<KeysView, 'minted'>, flash?: (keys: KeysView['keys']) => DashboardPage['flash'], status?: number) {
      const keys = await deps.apiKeys.list(deps.db, sessionContext(request).actor);
      const body = keysPage({ csrf: kit.csrf.tokenFor(request, reply), keys, maxActive: MAX_ACTIVE_KEYS, publicUrl: deps.publicUrl, ...extra });
      return kit.render(request, reply, { title: 'API keys', active: 'keys', body, flash: flash?.(keys), status });
    }

    /** A label the rules refuse comes back on the page with what to change, not as an error page. */
    async function refusedOnPage(request: FastifyRequest, reply: FastifyReply, act: () => Promise<FastifyReply>) {
      try {
        return await act();
      } catch (err) {
        if (!(err instanceof AppError) || err.code !== 'VALIDATION_ERROR') throw err;
        return render(request, reply, {}, () => ({ kind: 'error', text: `${err.message}. Nothing was saved.` }), 400);
      }
    }

    r.get('/dashboard/keys', { config, schema: { querystring: ZKeysQuery } }, async (request, reply) => {
      const { revoked } = request.query;
      return render(request, reply, {}, (keys) => {
        const key = revoked ? keys.find((k) => k.id === revoked && k.revokedAt) : undefined;
        if (key) return { kind: 'ok', text: `Revoked ${key.prefix}…: the API refuses it from now on.` };
        const named = request.query.labelled ? keys.find((k) => k.id === request.query.labelled) : undefined;
        return named && { kind: 'ok', text: named.label ? `Saved the label of ${named.prefix}…: ${named.label}.` : `Removed the label of ${named.prefix}….` };
      });
    });

    r.post('/dashboard/keys', { config }, async (request, reply) => {
      const body = request.body as Record<string, string> | undefined;
      const mode = body?.mode;
      if (mode !== 'live' && mode !== 'test') {
        throw new AppError('VALIDATION_ERROR', 'Choose a live or a test key', { details: [{ path: 'body.mode', message: 'must be live or test' }] });
      }
      return refusedOnPage(request, reply, async () => {
        const { key, view } = await deps.db.transaction((tx) => deps.apiKeys.mint(tx, sessionContext(request), mode, body?.label));
        return render(request, reply, { minted: { key, mode, prefix: view.prefix } });
      });
    });

    r.post('/dashboard/keys/:id/label', { config, schema: { params: z.object({ id: z.string().max(64) }) } }, async (request, reply) => {
      const label = (request.body as Record<string, string> | undefined)?.label;
      return refusedOnPage(request, reply, async () => {
        const view = await deps.db.transaction((tx) => deps.apiKeys.relabel(tx, sessionContext(request), request.params.id, label));
        return reply.redirect(`/dashboard/keys?labelled=${encodeURIComponent(view.id)}`, 303);
      });
    });

    r.post('/dashboard/keys/:id/revoke', { config, schema: { params: z.object({ id: z.string() }) } }, async (request, reply) => {
      const { keyHash, view } = await deps.db.transaction((tx) => deps.apiKeys.revoke(tx, sessionContext(request), request.params.id));
      // Other nodes evict on the NOTIFY the revocation committed; this one at once.
      deps.apiKeyCache.evict(keyHash);
      return reply.redirect(`/dashboard/keys?revoked=${encodeURIComponent(view.id)}`, 303);
    });
  };
}
