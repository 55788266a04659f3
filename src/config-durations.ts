/**
 * Bounds of the durations the job queue and the idempotency records compute in SQL as
 * `<ms>::int * interval '1 millisecond'`. PostgreSQL's integer ends at 2^31 - 1 ms (24.8 days): past
 * it the statement fails ("integer out of range"), a failing job's retry is never scheduled (it sits
 * `running` until its lease lapses) and every billable call fails. So config refuses larger values at
 * start, each bound well inside the integer.
 */
export const MAX_JOB_LEASE_MS = 24 * 3_600_000;
/** One entry of WEBHOOK_RETRY_SCHEDULE: a week. */
export const MAX_RETRY_DELAY_MS = 7 * 24 * 3_600_000;
/** IDEMPOTENCY_TTL_HOURS: 24 days. */
export const MAX_IDEMPOTENCY_TTL_HOURS = 24 * 24;

/** A duration list like `1m,5m,15m,1h` → milliseconds. Units: s, m, h; each entry at most a week. */
export function parseDurations(text: string): number[] {
  return text.split(',').map((part, index) => {
    const m = /^\s*(\d+)\s*(s|m|h)\s*$/.exec(part);
    if (!m) throw new Error(`entry ${index + 1} is not a duration like 30s, 5m or 1h`);
    const ms = Number(m[1]) * { s: 1_000, m: 60_000, h: 3_600_000 }[m[2] as 's' | 'm' | 'h'];
    if (ms > MAX_RETRY_DELAY_MS) throw new Error(`entry ${index + 1} is longer than ${MAX_RETRY_DELAY_MS / 3_600_000}h`);
    return ms;
  });
}
