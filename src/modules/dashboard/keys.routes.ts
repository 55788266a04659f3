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
const ZKeysQuery = z.object({ revoked: z.string().max(64).optional().catch(undefined) });

/**
 * GET /dashboard/keys; POST /dashboard/keys mints a key and shows it this once (the page is rendered
 * in the POST's answer, never stored, and no-store keeps it out of caches); POST
 * /dashboard/keys/:id/revoke revokes and sends the browser back with a notice.
 */
export function keysSection(deps: { db: Db; apiKeys: Pick<ApiKeysService, 'list' | 'mint' | 'revoke'>; apiKeyCache: Pick<ApiKeyCache, 'evict'>; publicUrl: string }): DashboardSection {
  return (kit) => async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { dashboard: 'session' as const };

    async function render(request: FastifyRequest, reply: FastifyReply, extra: Pick<KeysView, 'minted'>, flash?: (keys: KeysView['keys']) => DashboardPage['flash']) {
      const keys = await deps.apiKeys.list(deps.db, sessionContext(request).actor);
      const body = keysPage({ csrf: kit.csrf.tokenFor(request, reply), keys, maxActive: MAX_ACTIVE_KEYS, publicUrl: deps.publicUrl, ...extra });
      return kit.render(request, reply, { title: 'API keys', active: 'keys', body, flash: flash?.(keys) });
    }

    r.get('/dashboard/keys', { config, schema: { querystring: ZKeysQuery } }, async (request, reply) => {
      const { revoked } = request.query;
      return render(request, reply, {}, (keys) => {
        const key = revoked ? keys.find((k) => k.id === revoked && k.revokedAt) : undefined;
        return key && { kind: 'ok', text: `Revoked ${key.prefix}…: the API refuses it from now on.` };
      });
    });

    r.post('/dashboard/keys', { config }, async (request, reply) => {
      const mode = (request.body as Record<string, string> | undefined)?.mode;
      if (mode !== 'live' && mode !== 'test') {
        throw new AppError('VALIDATION_ERROR', 'Choose a live or a test key', { details: [{ path: 'body.mode', message: 'must be live or test' }] });
      }
      const { key, view } = await deps.db.transaction((tx) => deps.apiKeys.mint(tx, sessionContext(request), mode));
      return render(request, reply, { minted: { key, mode, prefix: view.prefix } });
    });

    r.post('/dashboard/keys/:id/revoke', { config, schema: { params: z.object({ id: z.string() }) } }, async (request, reply) => {
      const { keyHash, view } = await deps.db.transaction((tx) => deps.apiKeys.revoke(tx, sessionContext(request), request.params.id));
      // Other nodes evict on the NOTIFY the revocation committed; this one at once.
      deps.apiKeyCache.evict(keyHash);
      return reply.redirect(`/dashboard/keys?revoked=${encodeURIComponent(view.id)}`, 303);
    });
  };
}
