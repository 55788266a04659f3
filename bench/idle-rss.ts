import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { startSignet, type DbKind } from './servers.js';

export function readRssKb(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts a fresh `signet serve` in its own process (new DATA_DIR; on PostgreSQL a new schema chosen
 * through the connection string's search_path), waits for /health, lets it settle, and reads its
 * resident set size from /proc. Returns kilobytes, or undefined where /proc is not available.
 */
export async function measureIdleRss(kind: DbKind, databaseUrl: string | undefined, settleMs: number): Promise<number | undefined> {
  return withServer(kind, databaseUrl, async (_base, pid) => {
    await sleep(settleMs);
    return readRssKb(pid);
  });
}

/** Runs `fn` against a fresh `signet serve` process (its base URL and pid), then stops it and cleans up. */
export async function withServer<T>(kind: DbKind, databaseUrl: string | undefined, fn: (base: string, pid: number) => Promise<T>, env: Record<string, string> = {}): Promise<T> {
  const server = await startSignet(kind, databaseUrl, { env });
  try {
    return await fn(server.base, server.pid);
  } finally {
    await server.stop();
  }
}
