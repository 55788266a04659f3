export type FetchLike = (input: Request, init?: RequestInit) => Promise<Response>;

export type RetryOptions = {
  /** Retries after the first attempt (default 3). */
  maxRetries: number;
  /** First backoff in ms, doubled per retry, capped at 10 s (default 500). */
  baseDelayMs: number;
};

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);
const MAX_DELAY_MS = 10_000;

/**
 * A fetch that retries what is safe to retry: a network error, 429, 503, and 409
 * IDEMPOTENCY_KEY_IN_USE (the first attempt of this very key is still running). A mutation is only
 * retried when it carries an Idempotency-Key, which every retry repeats, so a retry never acts twice.
 */
export function retryingFetch(fetchImpl: FetchLike, opts: RetryOptions): FetchLike {
  return async (request) => {
    const safe = !MUTATING.has(request.method) || request.headers.has('idempotency-key');
    for (let attempt = 0; ; attempt++) {
      const last = !safe || attempt >= opts.maxRetries;
      let response: Response;
      try {
        response = await fetchImpl(last ? request : request.clone());
      } catch (err) {
        if (last) throw err;
        await sleep(backoff(opts.baseDelayMs, attempt));
        continue;
      }
      if (last || !(await retryable(response))) return response;
      await response.body?.cancel();
      await sleep(retryAfterMs(response) ?? backoff(opts.baseDelayMs, attempt));
    }
  };
}

async function retryable(response: Response): Promise<boolean> {
  if (response.status === 503 || response.status === 429) return true;
  if (response.status !== 409) return false;
  const body = (await response.clone().json().catch(() => undefined)) as { code?: string } | undefined;
  return body?.code === 'IDEMPOTENCY_KEY_IN_USE';
}

const backoff = (base: number, attempt: number) => Math.min(MAX_DELAY_MS, base * 2 ** attempt) * (0.8 + Math.random() * 0.4);

/** Retry-After in seconds or as an HTTP date; capped, so a far date cannot hang a caller. */
function retryAfterMs(response: Response): number | undefined {
  const h = response.headers.get('retry-after');
  if (!h) return undefined;
  const seconds = Number(h);
  const ms = Number.isFinite(seconds) ? seconds * 1000 : Date.parse(h) - Date.now();
  return Number.isFinite(ms) ? Math.min(MAX_DELAY_MS, Math.max(0, ms)) : undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
