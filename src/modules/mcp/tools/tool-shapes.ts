import { z } from 'zod';
import type { Paging } from '../../../context.js';
import { MAX_IDEMPOTENCY_KEY_LENGTH } from '../../../http/idempotency.js';

/** The Idempotency-Key of REST as a tool argument: one charge per key, the same answer on a retry. */
export const ZIdempotencyKey = z
  .string()
  .min(1)
  .max(MAX_IDEMPOTENCY_KEY_LENGTH)
  .describe('Your own unique key for this call (e.g. a UUID), 1 to 255 characters; a retry with the same key and the same arguments returns the first answer and charges nothing again');

/** limit/offset of a list tool, with REST's bounds and defaults. */
export const pagingInput = {
  limit: z.number().int().min(1).max(100).default(20).describe('Page size, 1 to 100 (default 20)'),
  offset: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).default(0).describe('Items to skip (default 0)'),
};

export const toPaging = (args: { limit: number; offset: number }): Paging => ({ style: 'offset', limit: args.limit, offset: args.offset });

/** The output of a list tool: REST's limit/offset page. */
export const pageOutput = <T extends z.ZodType>(item: T) => ({
  data: z.array(item),
  total: z.number().int().describe('Items in all pages'),
  limit: z.number().int(),
  offset: z.number().int(),
});

export const pageOf = <T>(paging: Paging, page: { rows: T[]; total: number }) => ({ data: page.rows, total: page.total, limit: paging.limit, offset: paging.offset });

/** "3 of 12 (offset 0)" for a list tool's text rendering. */
export const countText = (p: { data: unknown[]; total: number; offset: number }) => `${p.data.length} of ${p.total} (offset ${p.offset})`;
