import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { webhooksPage, type WebhooksView } from '../../web/dashboard/webhooks.js';
import { V1_EVENTS, ZCreateWebhook, ZUpdateWebhook } from '../webhooks/webhooks.schemas.js';
import type { WebhooksService } from '../webhooks/webhooks.service.js';
import { sessionContext } from './dashboard-http.js';
import type { DashboardSection } from './dashboard.routes.js';
import type { ApiKeysService } from '../account/api-keys.service.js';
import { ZMode, ZModeAsked, onlyTestKeys, withTestFallback, type Mode } from './page-query.js';

/** Registrations shown; the API's own cap on a list page, more than anyone registers. */
const MAX_WEBHOOKS = 100;
const RECENT_DELIVERIES = 10;

/** After an action, the page says what happened; the value is one of these words, never echoed text. */
const DONE: Record<string, string> = {
  updated: 'Endpoint saved.',
  deleted: 'Endpoint deleted: it gets no more deliveries. Its history stays with us for support.',
  test: 'Test event queued: a signed ping is on its way. Its delivery shows below in a moment.',
  redelivered: 'Redelivery queued: the same payload goes out again as a new delivery.',
};
const ZPageQuery = z.object({ mode: ZModeAsked, done: z.string().max(16).optional().catch(undefined) });

type Form = Record<string, string | undefined>;

/** Checkboxes named `event:<name>` (the form body keeps one value per name, so each event has its own). */
function eventsOf(body: Form): string[] {
  if (body['event:*'] === 'on') return ['*'];
  return V1_EVENTS.filter((e) => body[`event:${e}`] === 'on');
}

const modeOf = (body: Form): Mode => ZMode.parse(body.mode);
/** Back to the side the person acted on, named: without `?mode` a live page left empty would fall back to test data. */
const back = (reply: FastifyReply, mode: Mode, done: keyof typeof DONE) => reply.redirect(`/dashboard/webhooks?mode=${mode}&done=${done}`, 303);

/** A refused form: the first problem in words a person can act on. */
function problemOf(err: z.ZodError): string {
  const issue = err.issues[0];
  const field = String(issue?.path[0] ?? '');
  if (field === 'events') return 'Choose at least one event, or all events.';
  if (field === 'url') return 'Enter the URL of your endpoint, like https://example.com/hooks/signet.';
  if (field === 'description') return 'Keep the description under 500 characters.';
  return issue?.message ?? 'Check the form and try again.';
}

/**
 * GET /dashboard/webhooks: every registration of the mode with its last deliveries; its forms create,
 * edit, delete, send a test event and redeliver, each through the same service as the API.
 */
export function webhookPagesSection(deps: {
  db: Db;
  webhooks: Pick<WebhooksService, 'list' | 'deliveries' | 'checkCreate' | 'checkUpdate' | 'create' | 'update' | 'remove' | 'sendTest' | 'redeliver'>;
  apiKeys: Pick<ApiKeysService, 'list'>;
  publicUrl: string;
}): DashboardSection {
  return (kit) => async (app) => {
    const r = app.withTypeProvider<ZodTypeProvider>();
    const config = { dashboard: 'session' as const };

    async function render(request: FastifyRequest, reply: FastifyReply, asked: Mode | undefined, extra: Pick<WebhooksView, 'created'> & { flash?: { kind: 'ok' | 'error'; text: string }; status?: number } = {}) {
      const list = (m: Mode) => deps.webhooks.list(deps.db, sessionContext(request, m), { style: 'offset', limit: MAX_WEBHOOKS, offset: 0 });
      const keys = asked ? [] : await deps.apiKeys.list(deps.db, sessionContext(request).actor);
      const { mode, testFallback, result } = await withTestFallback(asked, list, { onlyTestKeys: onlyTestKeys(keys) });
      const other = await list(mode === 'live' ? 'test' : 'live');
      const ctx = sessionContext(request, mode);
      const webhooks = await Promise.all(
        result.rows.map(async (w) => {
          const d = await deps.webhooks.deliveries(deps.db, ctx, w.id, undefined, { style: 'offset', limit: RECENT_DELIVERIES, offset: 0 });
          return { ...w, deliveries: d.rows, totalDeliveries: d.total };
        }),
      );
      const counts = mode === 'live' ? { live: result.total, test: other.total } : { live: other.total, test: result.total };
      const body = webhooksPage({ mode, testFallback, counts, publicUrl: deps.publicUrl, webhooks, csrf: kit.csrf.tokenFor(request, reply), events: V1_EVENTS, created: extra.created });
      return kit.render(request, reply, { title: 'Webhooks', active: 'webhooks', body, flash: extra.flash, status: extra.status });
    }

    /** Refusals a person can fix (a bad URL, a disabled endpoint, the hourly cap) come back on the page, not as an error page. */
    async function orRefusal(request: FastifyRequest, reply: FastifyReply, mode: Mode, act: () => Promise<FastifyReply>) {
      try {
        return await act();
      } catch (err) {
        if (err instanceof AppError && err.status < 500 && err.status !== 404) return render(request, reply, mode, { flash: { kind: 'error', text: err.message }, status: err.status });
        throw err;
      }
    }

    r.get('/dashboard/webhooks', { config, schema: { querystring: ZPageQuery } }, async (request, reply) => {
      const text = request.query.done ? DONE[request.query.done] : undefined;
      return render(request, reply, request.query.mode, { flash: text ? { kind: 'ok', text } : undefined });
    });

    r.post('/dashboard/webhooks', { config }, async (request, reply) => {
      const body = (request.body ?? {}) as Form;
      const mode = modeOf(body);
      const parsed = ZCreateWebhook.safeParse({ url: (body.url ?? '').trim(), events: eventsOf(body), description: body.description?.trim() || null });
      if (!parsed.success) return render(request, reply, mode, { flash: { kind: 'error', text: problemOf(parsed.error) }, status: 400 });
      return orRefusal(request, reply, mode, async () => {
        const input = await deps.webhooks.checkCreate(parsed.data);
        const created = await deps.db.transaction((tx) => deps.webhooks.create(tx, sessionContext(request, mode), input));
        // The secret is in this answer only (no-store, like a minted key).
        return render(request, reply, mode, { created: { url: created.url, secret: created.secret } });
      });
    });

    r.post('/dashboard/webhooks/:id', { config, schema: { params: z.object({ id: z.string().max(64) }) } }, async (request, reply) => {
      const body = (request.body ?? {}) as Form;
      const mode = modeOf(body);
      const parsed = ZUpdateWebhook.safeParse({ url: (body.url ?? '').trim(), events: eventsOf(body), description: body.description?.trim() || null, active: body.active === 'on' });
      if (!parsed.success) return render(request, reply, mode, { flash: { kind: 'error', text: problemOf(parsed.error) }, status: 400 });
      return orRefusal(request, reply, mode, async () => {
        const input = await deps.webhooks.checkUpdate(parsed.data);
        await deps.db.transaction((tx) => deps.webhooks.update(tx, sessionContext(request, mode), request.params.id, input));
        return back(reply, mode, 'updated');
      });
    });

    r.post('/dashboard/webhooks/:id/delete', { config, schema: { params: z.object({ id: z.string().max(64) }) } }, async (request, reply) => {
      const mode = modeOf((request.body ?? {}) as Form);
      await deps.db.transaction((tx) => deps.webhooks.remove(tx, sessionContext(request, mode), request.params.id));
      return back(reply, mode, 'deleted');
    });

    r.post('/dashboard/webhooks/:id/test', { config, schema: { params: z.object({ id: z.string().max(64) }) } }, async (request, reply) => {
      const mode = modeOf((request.body ?? {}) as Form);
      return orRefusal(request, reply, mode, async () => {
        await deps.db.transaction((tx) => deps.webhooks.sendTest(tx, sessionContext(request, mode), request.params.id));
        return back(reply, mode, 'test');
      });
    });

    r.post('/dashboard/webhooks/:id/deliveries/:deliveryId/redeliver', { config, schema: { params: z.object({ id: z.string().max(64), deliveryId: z.string().max(64) }) } }, async (request, reply) => {
      const mode = modeOf((request.body ?? {}) as Form);
      return orRefusal(request, reply, mode, async () => {
        await deps.db.transaction((tx) => deps.webhooks.redeliver(tx, sessionContext(request, mode), request.params.id, request.params.deliveryId));
        return back(reply, mode, 'redelivered');
      });
    });
  };
}
