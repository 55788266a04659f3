import { z } from 'zod';
import { ZCreateWebhook, ZDeliveriesQuery, ZDelivery, ZWebhook, ZWebhookCreated } from '../../webhooks/webhooks.schemas.js';
import type { WebhooksService } from '../../webhooks/webhooks.service.js';
import { defineTool, type ToolDefinition } from '../tool.js';
import { ZIdempotencyKey, countText, pageOf, pageOutput, pagingInput, toPaging } from './tool-shapes.js';

export type WebhookToolDeps = { webhooks: Pick<WebhooksService, 'checkCreate' | 'create' | 'list' | 'deliveries'> };

/** Webhook registrations as MCP tools: the same service calls and audit rows as /v1/webhooks. */
export function webhookTools(deps: WebhookToolDeps): ToolDefinition[] {
  const { webhooks } = deps;
  return [
    defineTool({
      name: 'create_webhook',
      title: 'Register a webhook',
      description: `Registers a URL that receives envelope events as signed POSTs. events: any of envelope.sent, envelope.viewed, envelope.signed, envelope.completed, envelope.rejected, envelope.expired, envelope.cancelled, or ["*"] for all seven; envelope.reminder_sent (an automatic reminder or expiry warning was emailed) only when named; the URL must be http or https on a public address. The answer carries the signing secret (whsec_…) once: keep it, it is never shown again. Each delivery has X-Service-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>" with the secret>.
Free. idempotencyKey is optional: with one, a retry returns the same registration (and secret) instead of registering twice.
Errors: INVALID_WEBHOOK_URL (not http(s), a private or local address, or a host that does not resolve), VALIDATION_ERROR (unknown event name), IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_KEY_IN_USE.`,
      input: { ...ZCreateWebhook.shape, idempotencyKey: ZIdempotencyKey.optional() },
      output: ZWebhookCreated.shape,
      mutates: true,
      async run(tc, args) {
        const { idempotencyKey: _key, ...input } = args;
        // As the REST route: the URL policy and its DNS lookup run before the transaction opens.
        const checked = await webhooks.checkCreate(input);
        return tc.mutate((tx) => webhooks.create(tx, tc.ctx, checked));
      },
      text: (w) => `Webhook ${w.webhookId} → ${w.url} for ${w.events.join(', ')}. Signing secret (shown once, keep it): ${w.secret}`,
    }),

    defineTool({
      name: 'list_webhooks',
      title: 'List webhooks',
      description: 'Lists your webhook registrations, without their secrets. Each has its url, events, active, consecutiveFailures and disabledReason. Free. Errors: VALIDATION_ERROR (bad paging).',
      input: { ...pagingInput },
      output: pageOutput(ZWebhook),
      mutates: false,
      async run(tc, args) {
        const paging = toPaging(args);
        return pageOf(paging, await webhooks.list(tc.db, tc.ctx, paging));
      },
      text: (p) => [`Webhooks ${countText(p)}`, ...p.data.map((w) => `- ${w.webhookId} → ${w.url} (${w.active ? 'active' : `inactive${w.disabledReason ? `: ${w.disabledReason}` : ''}`})`)].join('\n'),
    }),

    defineTool({
      name: 'list_webhook_deliveries',
      title: 'List deliveries of a webhook',
      description:
        'Lists the deliveries of one webhook registration, newest first. Each has its event, envelopeId, status (PENDING, SUCCESS, FAILED), attempts, last response code or error, and next retry. Free. Errors: WEBHOOK_NOT_FOUND (no such webhook among yours), VALIDATION_ERROR.',
      input: {
        webhookId: z.string().min(1).max(100).describe('The webhook id (a UUID, or wh_<UUID>) from create_webhook or list_webhooks'),
        ...ZDeliveriesQuery.shape,
        ...pagingInput,
      },
      output: pageOutput(ZDelivery),
      mutates: false,
      async run(tc, args) {
        const paging = toPaging(args);
        return pageOf(paging, await webhooks.deliveries(tc.db, tc.ctx, args.webhookId, args.status, paging));
      },
      text: (p) => [`Deliveries ${countText(p)}`, ...p.data.map((d) => `- ${d.deliveryId} ${d.event}: ${d.status} after ${d.attempts} attempt(s)${d.responseCode ? `, HTTP ${d.responseCode}` : ''}`)].join('\n'),
    }),
  ];
}
