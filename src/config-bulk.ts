import { z } from 'zod';

const unsetIfEmpty = (v: unknown) => (v === '' ? undefined : v);
const int = (min: number, max: number) => z.preprocess(unsetIfEmpty, z.coerce.number().int().min(min).max(max).optional());

/** Bulk send variables, spread into config.ts's environment schema. */
export const BULK_ENV = {
  /** The body of POST /v1/templates/{id}/bulk-sends (JSON, CSV or the multipart CSV file). */
  BULK_SEND_MAX_BYTES: int(1024, 16 * 1024 * 1024).default(2 * 1024 * 1024),
  /** How many jobs create one bulk send's envelopes side by side (each claims rows in turn). */
  BULK_SEND_PARALLEL_JOBS: int(1, 16).default(2),
};

type BulkEnv = z.infer<z.ZodObject<typeof BULK_ENV>>;

export type BulkSendConfig = Readonly<{ maxBytes: number; parallelJobs: number; maxRows: number }>;

/** A bulk send takes at most this many rows, whatever the configuration. */
export const BULK_SEND_MAX_ROWS = 1000;

export const bulkSendConfig = (e: BulkEnv): BulkSendConfig => Object.freeze({ maxBytes: e.BULK_SEND_MAX_BYTES, parallelJobs: e.BULK_SEND_PARALLEL_JOBS, maxRows: BULK_SEND_MAX_ROWS });
