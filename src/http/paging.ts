import { z } from 'zod';
import type { Paging } from '../context.js';

const bounded = (min: number, max: number) => z.coerce.number().int().min(min).max(max).optional();

/** Query parameters of every list: limit/offset, or the Alt page/perPage. */
export const ZPagingQuery = z.object({
  limit: bounded(1, 100).describe('Page size, 1..100, default 20'),
  offset: bounded(0, Number.MAX_SAFE_INTEGER).describe('Items to skip, default 0'),
  page: bounded(1, 1_000_000).describe('Alt paging: page number, default 1'),
  perPage: bounded(1, 100).describe('Alt paging: page size, max 100, default 20'),
});
export type TPagingQuery = z.infer<typeof ZPagingQuery>;

/** The Alt form is chosen when page or perPage is given; it answers in its own wrapper. */
export function resolvePaging(q: TPagingQuery): Paging {
  if (q.page !== undefined || q.perPage !== undefined) {
    const page = q.page ?? 1;
    const perPage = q.perPage ?? 20;
    return { style: 'page', page, perPage, limit: perPage, offset: (page - 1) * perPage };
  }
  return { style: 'offset', limit: q.limit ?? 20, offset: q.offset ?? 0 };
}

export type Page<T> = { data: T[]; total: number; limit: number; offset: number } | { data: T[]; total: number; page: number; perPage: number };

export function toPage<T>(paging: Paging, data: T[], total: number): Page<T> {
  return paging.style === 'page'
    ? { data, total, page: paging.page, perPage: paging.perPage }
    : { data, total, limit: paging.limit, offset: paging.offset };
}

/** Response schema of a list: either wrapper, matching the paging style of the request. */
export function ZPage<T extends z.ZodType>(item: T) {
  return z.union([
    z.object({ data: z.array(item), total: z.number().int(), limit: z.number().int(), offset: z.number().int() }),
    z.object({ data: z.array(item), total: z.number().int(), page: z.number().int(), perPage: z.number().int() }),
  ]);
}
