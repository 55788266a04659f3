import { z } from 'zod';

export const ZCreateCustomer = z.object({
  email: z.email().max(320),
  name: z.string().trim().min(1).max(200),
  creditCents: z.number().int().min(0).max(100_000_000).optional(),
});

export const ZCreatedCustomer = z.object({
  customerId: z.uuid(),
  apiKey: z.string().describe('Live key, shown once'),
  testApiKey: z.string().describe('Test key, shown once'),
});

export const ZAddCredits = z.object({
  amountCents: z.number().int().min(1).max(100_000_000),
  reason: z.string().trim().min(1).max(500),
});

export const ZCreateApiKey = z.object({ mode: z.enum(['live', 'test']).default('live') });

export const ZIdParam = z.object({ id: z.uuid() });
/** A job's id: the bigserial an alert names in resourceId. */
export const ZJobIdParam = z.object({ id: z.coerce.number().int().min(1).max(Number.MAX_SAFE_INTEGER) });
export const ZKeyParam = z.object({ id: z.uuid(), keyId: z.uuid() });

export const ZCustomerDetail = z.object({
  customerId: z.uuid(),
  email: z.string(),
  name: z.string(),
  creditsCents: z.number().int(),
  balanceMicros: z.number().int(),
  sandboxUsed: z.number().int(),
  sandboxLimit: z.number().int(),
  createdAt: z.iso.datetime(),
  apiKeys: z.array(
    z.object({ keyId: z.uuid(), prefix: z.string(), mode: z.enum(['live', 'test']), createdAt: z.iso.datetime(), revokedAt: z.iso.datetime().nullable() }),
  ),
});

export const ZAuditQuery = z.object({ customerId: z.uuid().optional() });
