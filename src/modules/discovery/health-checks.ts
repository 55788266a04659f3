/** A dependency check that does not answer within this long has failed: /health must answer promptly. */
export const HEALTH_CHECK_TIMEOUT_MS = 2_000;

/** Resolves as `check` does, or rejects once `ms` have passed. */
export async function withTimeout(check: () => Promise<void>, ms = HEALTH_CHECK_TIMEOUT_MS): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([check(), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}
