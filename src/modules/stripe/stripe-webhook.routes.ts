import type { FastifyInstance } from 'fastify';
import type { StripeEventsService } from './stripe-events.service.js';

/** Stripe's events are small; a body past this is no Stripe event. */
const BODY_LIMIT = 512 * 1024;

/**
 * POST /webhooks/stripe (outside /v1; Stripe's signature is the credential). The signature covers the
 * exact bytes Stripe sent, so this plugin reads JSON as a raw Buffer instead of the app's parsed JSON;
 * the parser change stays inside this plugin.
 */
export function stripeWebhookRoutes(deps: { stripeEvents: StripeEventsService }) {
  return async function (app: FastifyInstance): Promise<void> {
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', { parseAs: 'buffer', bodyLimit: BODY_LIMIT }, (_request, body, done) => done(null, body));

    app.post('/webhooks/stripe', { schema: { hide: true }, bodyLimit: BODY_LIMIT }, async (request) => {
      const raw = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const signature = request.headers['stripe-signature'];
      return deps.stripeEvents.receive(raw, Array.isArray(signature) ? signature[0] : signature, { actorType: 'system', requestId: request.id, ip: request.ip });
    });
  };
}
