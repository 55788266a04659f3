import { z } from 'zod';
import { VERIFICATION_STATUSES, VERIFICATION_TYPES } from '../../db/schema/verifications.js';

const METADATA_KEY = /^[A-Za-z0-9_.:-]{1,40}$/;

/** Up to 20 string pairs: keys 1..40 of [A-Za-z0-9_.:-], values up to 500 characters. */
export const ZMetadata = z
  .record(z.string().regex(METADATA_KEY, 'keys are 1 to 40 of A-Z a-z 0-9 _ . : -'), z.string().max(500))
  .refine((m) => Object.keys(m).length <= 20, { message: 'at most 20 keys' })
  .describe('Your own string pairs, returned as given: at most 20 keys (1..40 characters of A-Z a-z 0-9 _ . : -), values up to 500 characters');

export const ZCreateVerification = z.object({
  type: z.enum(VERIFICATION_TYPES).describe('email: a 6-digit code we email (valid 24 h); id_document: Stripe Identity (valid 48 h)'),
  email: z.email().max(254),
  name: z.string().trim().min(1).max(200).optional(),
  redirectUrl: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional()
    .describe('Where the person is sent once verified (email) or when they leave Stripe\'s page (id_document)'),
  metadata: ZMetadata.optional(),
});
export type TCreateVerification = z.infer<typeof ZCreateVerification>;

export const ZVerificationIdParam = z.object({ id: z.string().max(100) });

export const ZListQuery = z.object({ status: z.enum(VERIFICATION_STATUSES).optional().describe('Only verifications in this status') });

export const ZVerification = z
  .object({
    verificationId: z.uuid(),
    type: z.enum(VERIFICATION_TYPES),
    provider: z.enum(['email', 'stripe_identity']),
    status: z.enum(VERIFICATION_STATUSES).describe('pending, then verified, failed (5 wrong codes), expired (past expiresAt) or canceled'),
    email: z.string(),
    name: z.string().nullable(),
    verificationUrl: z
      .string()
      .nullable()
      .describe("Where the person verifies: our /verify page (email), Stripe's hosted page while pending (id_document); null for a signing recipient's verification (the signing page asks for the code)"),
    redirectUrl: z.string().nullable(),
    metadata: z.record(z.string(), z.string()),
    failureReason: z.string().nullable().describe("too_many_wrong_codes when failed; Stripe's last_error.code while the person may still retry"),
    attemptsLeft: z.number().int().nullable().describe('Wrong codes still allowed (email); null for id_document'),
    envelopeId: z.uuid().nullable().describe("The envelope of a signing recipient's verification; null otherwise"),
    expiresAt: z.string(),
    verifiedAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
  })
  .meta({ id: 'Verification' });

/** The verification page's JSON routes (POST /verify/{token}/code and /confirm). */
export const ZVerifyToken = z.object({ token: z.string().max(100) });
export const ZConfirmBody = z.object({
  code: z
    .string()
    .max(20)
    // People paste "123 456" or "123-456".
    .transform((c) => c.replace(/[\s-]/g, ''))
    .pipe(z.string().regex(/^\d{6}$/, 'the code is 6 digits')),
});
