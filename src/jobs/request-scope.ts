import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The request a piece of work runs for, carried in async context so that `enqueue`, called deep in a
 * service with only a transaction in hand, can stamp the request id on the job it writes, and a job's
 * own follow-up jobs carry it on. Set around each HTTP handler (app.ts) and each job run (worker.ts).
 */
const scope = new AsyncLocalStorage<string>();

/** Runs `fn` for this request id; for none, outside any (a job woken from a request's context is not that request's). */
export function runWithRequestId<T>(requestId: string | undefined, fn: () => T): T {
  return requestId === undefined ? scope.exit(fn) : scope.run(requestId, fn);
}

export const currentRequestId = (): string | undefined => scope.getStore();

/** The payload key that carries it: job schemas are plain objects, which ignore a key they do not name. */
export const REQUEST_ID_KEY = 'requestId';

/** The payload with the current request id added, when there is one and the payload is an object that does not name one. */
export function withRequestId(payload: unknown): unknown {
  const requestId = currentRequestId();
  if (requestId === undefined || typeof payload !== 'object' || payload === null || Array.isArray(payload) || REQUEST_ID_KEY in payload) return payload;
  return { ...payload, [REQUEST_ID_KEY]: requestId };
}

/** The request id a job's payload carries, if any. */
export function requestIdOf(payload: unknown): string | undefined {
  const value = typeof payload === 'object' && payload !== null ? (payload as Record<string, unknown>)[REQUEST_ID_KEY] : undefined;
  return typeof value === 'string' ? value : undefined;
}
