import { z } from 'zod';

export const ZAccount = z
  .object({
    accountId: z.uuid(),
    email: z.string(),
    name: z.string(),
    apiKeyPrefix: z.string().nullable().describe('Display prefix of the key used for this call'),
    mode: z.enum(['live', 'test']).describe('Mode of the credential used for this call'),
    creditsCents: z.number().int().describe('Prepaid balance in whole cents'),
    creditsFormatted: z.string().describe('Balance as text, e.g. "$5.00"'),
    balanceMicros: z.number().int().describe('Exact balance in micros (USD 1 = 1,000,000)'),
    sandboxUsed: z.number().int(),
    sandboxLimit: z.number().int(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'Account' });
export type TAccount = z.infer<typeof ZAccount>;

export const ZUsageEntry = z
  .object({
    id: z.uuid(),
    direction: z.enum(['debit', 'credit', 'refund']),
    amountCents: z.number().int(),
    amountFormatted: z.string(),
    amountMicros: z.number().int(),
    description: z.string(),
    envelopeId: z.uuid().nullable(),
    envelopeTitle: z.string().nullable(),
    txHash: z.string().nullable(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'UsageEntry' });
export type TUsageEntry = z.infer<typeof ZUsageEntry>;
