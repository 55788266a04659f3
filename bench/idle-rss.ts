import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../src/db/client.js';
import type { DbKind } from './targets.js';

const ROOT = path.resolve(import.meta.dirname, '..');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

/**
 * The built server when dist/ is at least as new as src/ (what `npm start` runs); otherwise the
 * sources through tsx, whose loader and transpiler add some memory of their own.
 */
export function serveCommand(): { args: string[]; label: string } {
  const built = path.join(ROOT, 'dist', 'cli.js');
  // tsc --incremental leaves unchanged outputs untouched; its build info is rewritten on every build.
  const buildInfo = path.join(ROOT, 'dist', '.tsbuildinfo');
  if (existsSync(built) && existsSync(buildInfo) && statSync(buildInfo).mtimeMs >= newestMtime(path.join(ROOT, 'src'))) {
    return { args: [built, 'serve'], label: 'node dist/cli.js serve' };
  }
  return { args: ['--import', 'tsx', path.join(ROOT, 'src', 'cli.ts'), 'serve'], label: 'node --import tsx src/cli.ts serve (dist/ missing or stale)' };
}

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
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-bench-rss-'));
  let dropSchema: (() => Promise<void>) | undefined;
  let url: string | undefined;
  if (kind === 'postgres') {
    if (!databaseUrl) throw new Error('the PostgreSQL scenario needs DATABASE_URL');
    const schemaName = `bench_${randomBytes(6).toString('hex')}`;
    const owner = await openDatabase({ databaseUrl, dataDir, poolSize: 1, schemaName }); // creates the schema
    await owner.close();
    dropSchema = owner.dropSchema;
    url = `${databaseUrl}${databaseUrl.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schemaName}`)}`;
  }

  const { args } = serveCommand();
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'warn', DATABASE_URL: url, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let output = '';
  child.stderr.on('data', (d: Buffer) => (output += d.toString()));
  try {
    const base = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`signet serve did not start in 60 s:\n${output}`)), 60_000);
      child.stdout.on('data', (d: Buffer) => {
        output += d.toString();
        const m = /listening on (http:\/\/[^\s]+)/.exec(output);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]);
        }
      });
      void exited.then((code) => {
        clearTimeout(timer);
        reject(new Error(`signet serve exited with ${code}:\n${output}`));
      });
    });
    const health = await fetch(`${base}/health`);
    if (health.status !== 200) throw new Error(`/health answered ${health.status}`);
    return await fn(base, child.pid!);
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    await dropSchema?.();
    rmSync(dataDir, { recursive: true, force: true });
  }
}
