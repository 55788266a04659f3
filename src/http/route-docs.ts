import { z } from 'zod';
import { ERROR_CODES, type ErrorCode } from '../errors.js';

/** Errors any authenticated customer route can answer with (SERVICE_UNAVAILABLE: the database is busy, DATABASE_ACQUIRE_TIMEOUT_MS). */
export const CUSTOMER_ERRORS = ['UNAUTHORIZED', 'TOKEN_INVALID', 'RATE_LIMITED', 'SERVICE_UNAVAILABLE', 'INTERNAL_ERROR'] as const satisfies ErrorCode[];
/** Errors of any route that takes input. */
export const INPUT_ERRORS = ['VALIDATION_ERROR'] as const satisfies ErrorCode[];
/** Errors of a mutation that accepts (or requires) an Idempotency-Key. */
export const IDEMPOTENCY_ERRORS = ['IDEMPOTENCY_KEY_INVALID', 'IDEMPOTENCY_KEY_IN_USE', 'IDEMPOTENCY_KEY_REUSED'] as const satisfies ErrorCode[];
export const JSON_BODY_ERRORS = ['INVALID_JSON', 'PAYLOAD_TOO_LARGE', 'UNSUPPORTED_MEDIA_TYPE'] as const satisfies ErrorCode[];

/**
 * Response schemas for the error codes a route can answer with, one per HTTP status, each documenting
 * its codes as an enum and their meanings in the description. This is what the OpenAPI shows.
 */
export function errorResponses(...groups: readonly (readonly ErrorCode[])[]): Record<number, z.ZodType> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(groups.flat())) {
    const status = ERROR_CODES[code][0];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<number, z.ZodType> = {};
  for (const [status, codes] of byStatus) {
    out[status] = z
      .looseObject({
        error: z.string(),
        code: z.enum(codes as [ErrorCode, ...ErrorCode[]]),
        requestId: z.string().optional(),
        details: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
      })
      .describe(codes.map((c) => `${c}: ${ERROR_CODES[c][1]}`).join('\n'));
  }
  return out;
}

/** Security requirement lists for the OpenAPI: the customer auth modes a route accepts. */
export const SECURITY = {
  read: [{ apiKey: [] }, { walletJwt: [] }],
  mutate: [{ apiKey: [] }, { walletJwt: [] }, { x402: [] }],
} as const;
