import { z } from 'zod';

/**
 * Query parameters of the data pages. A hand-edited or stale value falls back to the default rather
 * than failing: these are links people bookmark, and a wrong `page` is no reason for an error page.
 */
export const ZMode = z.enum(['live', 'test']).catch('live');
export const ZModeQuery = z.object({ mode: ZMode });
export const ZPageNumber = z.coerce.number().int().min(1).max(100_000).catch(1);
