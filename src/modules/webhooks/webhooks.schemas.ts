import { z } from 'zod';
import { EVENT_NAMES, OPT_IN_EVENTS } from '../envelopes/events.js';

export const V1_EVENTS = Object.values(EVENT_NAMES);

export const ZEvents = z
  .array(z.string())
  .min(1)
  .max(20)
  .superRefine((events, ctx) => {
    if (events.includes('*') && events.length > 1) ctx.addIssue({ code: 'custom', message: 'use ["*"] alone, or a list of event names' });
    events.forEach((e, i) => {
      if (e !== '*' && !(V1_EVENTS as string[]).includes(e) && !OPT_IN_EVENTS.includes(e)) ctx.addIssue({ code: 'custom', path: [i], message: `unknown event "${e}"; one of ${V1_EVENTS.join(', ')} or "*", or an opt-in event named explicitly (${OPT_IN_EVENTS.join(', ')})` });
    });
  })
  .transform((events) => [...new Set(events)]);

export const ZCreateWebhook = z.object({
  url: z.string().min(1).max(2048),
  events: ZEvents,
  description: z.string().max(500).nullish(),
  secret: z.string().min(24, 'a secret of your own must be at least 24 characters').max(255).optional(),
  format: z.enum(['standard', 'alt']).default('standard').describe('standard: {event, deliveredAt, envelope} signed t=…,v1=…; alt: {event, envelopeId, timestamp, data} signed sha256=…'),
});

export const ZUpdateWebhook = z
  .object({
    url: z.string().min(1).max(2048).optional(),
    events: ZEvents.optional(),
    description: z.string().max(500).nullish(),
    active: z.boolean().optional(),
    format: z.enum(['standard', 'alt']).optional(),
  })
  .refine((b) => Object.keys(b).length > 0, { message: 'give at least one of url, events, description, active, format' });

export const ZWebhookIdParam = z.object({ id: z.string() });

export const ZWebhook = z
  .object({
    id: z.uuid(),
    webhookId: z.string().describe('The same id with the wh_ prefix; either form is accepted in paths'),
    url: z.string(),
    events: z.array(z.string()),
    description: z.string().nullable(),
    format: z.enum(['standard', 'alt']),
    active: z.boolean(),
    consecutiveFailures: z.number().int(),
    disabledReason: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Webhook' });

export const ZWebhookCreated = ZWebhook.extend({ secret: z.string().describe('whsec_…: shown once, never again') });

export const ZDelivery = z
  .object({
    id: z.uuid(),
    deliveryId: z.string().describe('dlv_<uuid>, the X-Service-Delivery-Id header'),
    webhookId: z.uuid(),
    event: z.string(),
    envelopeId: z.uuid().nullable(),
    status: z.enum(['PENDING', 'SUCCESS', 'FAILED']),
    attempts: z.number().int(),
    responseCode: z.number().int().nullable(),
    errorMessage: z.string().nullable(),
    lastAttemptAt: z.string().nullable(),
    nextRetryAt: z.string().nullable(),
    redeliveryOf: z.uuid().nullable().describe('A redelivery: the id of the delivery whose payload it sends again'),
    createdAt: z.string(),
  })
  .meta({ id: 'WebhookDelivery' });

export const ZDeliveryParams = z.object({ id: z.string(), deliveryId: z.string() });

export const ZDeliveriesQuery = z.object({ status: z.enum(['PENDING', 'SUCCESS', 'FAILED']).optional() });
