import { z } from 'zod';

/**
 * Query parameters of the data pages. A hand-edited or stale value falls back to the default rather
 * than failing: these are links people bookmark, and a wrong `page` is no reason for an error page.
 */
export const ZMode = z.enum(['live', 'test']).catch('live');
export const ZModeQuery = z.object({ mode: ZMode });
export const ZPageNumber = z.coerce.number().int().min(1).max(100_000).catch(1);

/** `?mode` as asked, or nothing: a page without it may show test data when there is no live data (withTestFallback). */
export const ZModeAsked = z.enum(['live', 'test']).optional().catch(undefined);
export const ZModeAskedQuery = z.object({ mode: ZModeAsked });

export type Mode = 'live' | 'test';

/**
 * The one place that decides which side a data page shows. `?mode` asked: that side. Not asked: live,
 * unless the account has no live data and some test data (a new account's first sends are test sends,
 * and "No envelopes yet" beside "3 of 100 used" reads as a fault), or its only working keys are test
 * keys (nothing live can appear until it mints a live key); the page then says it shows test data.
 */
export async function withTestFallback<T extends { total: number }>(asked: Mode | undefined, load: (mode: Mode) => Promise<T>, opts: { onlyTestKeys?: boolean } = {}): Promise<{ mode: Mode; testFallback: boolean; result: T }> {
  const result = await load(asked ?? 'live');
  if (asked || result.total > 0) return { mode: asked ?? 'live', testFallback: false, result };
  const test = await load('test');
  return test.total > 0 || opts.onlyTestKeys ? { mode: 'test', testFallback: true, result: test } : { mode: 'live', testFallback: false, result };
}

/** Whether the account's active keys are all test keys (and there is at least one). */
export const onlyTestKeys = (keys: readonly { mode: Mode; revokedAt: Date | null }[]): boolean => {
  const active = keys.filter((k) => !k.revokedAt);
  return active.length > 0 && active.every((k) => k.mode === 'test');
};
