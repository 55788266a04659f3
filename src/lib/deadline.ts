/**
 * `work`'s answer, or a rejection with `timeout()` once `ms` have passed. The work is not cancelled:
 * a late answer or error is ignored. `work` must be a real promise (a drizzle query runs again on
 * every `then`: wrap it in Promise.resolve first).
 */
export async function within<T>(work: Promise<T>, ms: number, timeout: () => Error): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(timeout()), ms)));
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
