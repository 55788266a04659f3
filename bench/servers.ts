/**
 * Every server the bench measures runs in its own process, so the load generator (this process) and
 * the server never share an event loop: the bare route, the two same-work floors (bench/floors/) and
 * `signet serve`. Each prints `listening on http://…` on stdout once it accepts connections; stdout
 * and stderr go to a log file (what an operator's log collector would read), never through a pipe
 * this process has to drain.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDatabase } from '../src/db/client.js';
import { assertSameRuntime } from '../test/fixtures/runtime.js';

export type DbKind = 'pglite' | 'postgres';
export const DB_LABEL: Record<DbKind, string> = { pglite: 'PGlite', postgres: 'PostgreSQL' };

export const ROOT = path.resolve(import.meta.dirname, '..');

/** Signet's DATABASE_POOL_SIZE default; the read and create floors get the same pool. */
export const POOL_SIZE = process.env.DATABASE_POOL_SIZE || '10';

/** The operator token the bench gives `signet serve`, to create its customer through POST /ops/customers. */
export const OPS_TOKEN = 'bench-ops-token-0123456789abcdef';

export type ServerProcess = {
  /** http://127.0.0.1:port */
  base: string;
  pid: number;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it exited and its files are removed. */
  stop(): Promise<void>;
};

/** The newest modification time of a file under `dir`. */
function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(file) : statSync(file).mtimeMs);
  }
  return newest;
}

/**
 * Whether `npm run build` ran after the last change under src/: it ends by writing dist/.built. (The
 * outputs' own times cannot tell: tsc leaves an output it would write unchanged as it was, so a source
 * touched and restored, by `git stash` say, made a fresh build look stale.)
 */
function distFresh(): boolean {
  const stamp = path.join(ROOT, 'dist', '.built');
  return existsSync(stamp) && statSync(stamp).mtimeMs >= newestMtime(path.join(ROOT, 'src'));
}

/**
 * The built server when dist/ was built after the last change to src/ (what `npm start` runs);
 * otherwise the sources through tsx, whose loader and transpiler add some memory of their own.
 */
export function serveCommand(): { args: string[]; label: string } {
  const built = path.join(ROOT, 'dist', 'cli.js');
  if (existsSync(built) && distFresh()) return { args: [built, 'serve'], label: 'node dist/cli.js serve' };
  return { args: ['--import', 'tsx', path.join(ROOT, 'src', 'cli.ts'), 'serve'], label: 'node --import tsx src/cli.ts serve (dist/ missing or stale)' };
}

/** Starts `node <args>` with `env`, waits for its `listening on` line (60 s at most). */
export async function startProcess(label: string, args: string[], env: Record<string, string | undefined>, cleanup: () => Promise<void> = async () => {}): Promise<ServerProcess> {
  const logDir = mkdtempSync(path.join(tmpdir(), 'signet-bench-log-'));
  const logFile = path.join(logDir, 'out.log');
  const fd = openSync(logFile, 'w');
  const child = spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const log = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  let stopped = false;
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    await cleanup();
    rmSync(logDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 60_000;
  try {
    for (;;) {
      // The announcement is among the first lines: read only the head of a log that may grow fast.
      const head = log().slice(0, 64 * 1024);
      const m = /listening on (http:\/\/[^\s)]+)/.exec(head);
      // Signet names its runtime: a server on another Node.js than the bench's would skew every ratio.
      if (m && /^Signet /m.test(head)) assertSameRuntime(head, label);
      if (m) return { base: m[1].replace('0.0.0.0', '127.0.0.1'), pid: child.pid!, stop };
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`${label} exited (${child.exitCode ?? child.signalCode}):\n${log()}`);
      if (Date.now() > deadline) throw new Error(`${label} did not start in 60 s:\n${log()}`);
      await sleep(50);
    }
  } catch (err) {
    await stop();
    throw err;
  }
}

/** A fresh schema of DATABASE_URL (dropped by `drop`) and the connection string that selects it. */
export async function freshSchema(databaseUrl: string, prefix = 'bench'): Promise<{ url: string; schema: string; drop(): Promise<void> }> {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`;
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-bench-schema-'));
  const owner = await openDatabase({ databaseUrl, dataDir, poolSize: 1, schemaName: schema }); // creates the schema
  await owner.close();
  rmSync(dataDir, { recursive: true, force: true });
  const url = `${databaseUrl}${databaseUrl.includes('?') ? '&' : '?'}options=${encodeURIComponent(`-c search_path=${schema}`)}`;
  return { url, schema, drop: async () => owner.dropSchema?.() };
}

export type SignetOptions = {
  /** Extra environment (overrides the bench's defaults). */
  env?: Record<string, string>;
  /** Node flags before the script, e.g. --cpu-prof. */
  nodeArgs?: string[];
};

/**
 * `signet serve` in its own process on a file-backed PGlite in a fresh DATA_DIR, or on a fresh schema
 * of DATABASE_URL (chosen through the connection string's search_path). Defaults: the rate limit out
 * of reach, OPS_TOKEN set, LOG_LEVEL warn; callers override any of them.
 */
export async function startSignet(kind: DbKind, databaseUrl: string | undefined, opts: SignetOptions = {}): Promise<ServerProcess> {
  if (kind === 'postgres' && !databaseUrl) throw new Error('the PostgreSQL scenario needs DATABASE_URL');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-bench-data-'));
  const schema = kind === 'postgres' ? await freshSchema(databaseUrl!) : undefined;
  const cleanup = async () => {
    await schema?.drop();
    rmSync(dataDir, { recursive: true, force: true });
  };
  const { args } = serveCommand();
  // startProcess cleans up by itself when the server does not start.
  const server = await startProcess(
    'signet serve',
    [...(opts.nodeArgs ?? []), ...args],
    {
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      DATABASE_URL: schema?.url,
      // PGlite even where the default store or the caller's environment says otherwise.
      ...(kind === 'pglite' ? { EMBEDDED_DB: 'pglite' } : {}),
      LOG_LEVEL: 'warn',
      OPS_TOKEN,
      RATE_LIMIT_MAX: '1000000000',
      ...opts.env,
    },
    cleanup,
  );
  const health = await fetch(`${server.base}/health`);
  await health.arrayBuffer();
  if (health.status !== 200) {
    await server.stop();
    throw new Error(`/health answered ${health.status}`);
  }
  return server;
}

/** A customer with an API key, created through the operator API as an operator would. */
export async function createCustomer(base: string, creditCents = 100_000_000): Promise<{ customerId: string; apiKey: string }> {
  const res = await fetch(`${base}/ops/customers`, {
    method: 'POST',
    headers: { authorization: `Bearer ${OPS_TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ email: `bench-${randomBytes(4).toString('hex')}@example.com`, name: 'Bench', creditCents }),
  });
  if (res.status !== 201 && res.status !== 200) throw new Error(`POST /ops/customers answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { customerId: string; apiKey: string };
}

const floorScript = (name: string) => path.join(ROOT, 'bench', 'floors', `${name}.ts`);

/** The bare Fastify JSON route. */
export function startBare(): Promise<ServerProcess> {
  return startProcess('bare route', ['--import', 'tsx', floorScript('bare')], {});
}

/**
 * A same-work floor (bench/floors/read.ts or create.ts) on the given store: a fresh schema of
 * DATABASE_URL with Signet's pool size, or PGlite in a fresh directory.
 */
export async function startFloor(name: 'read' | 'create', kind: DbKind, databaseUrl: string | undefined, env: Record<string, string> = {}): Promise<ServerProcess> {
  const dataDir = mkdtempSync(path.join(tmpdir(), `signet-bench-floor-`));
  const schema = kind === 'postgres' ? await freshSchema(databaseUrl!, 'bench_floor') : undefined;
  return startProcess(
    `${name} floor`,
    ['--import', 'tsx', floorScript(name)],
    { FLOOR_DATA_DIR: dataDir, FLOOR_DATABASE_URL: schema?.url, FLOOR_POOL_SIZE: POOL_SIZE, ...env },
    async () => {
      await schema?.drop();
      rmSync(dataDir, { recursive: true, force: true });
    },
  );
}
