// test-lane: once (starts its own embedded PostgreSQL whatever DATABASE_URL says)
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { after, test } from 'node:test';
import pg from 'pg';
import { openDatabase } from '../src/db/client.js';
import { embeddedPostgresUnavailable, startEmbeddedPostgres } from '../src/db/embedded-postgres.js';
import { RUN_TS } from './fixtures/run-ts.js';

/**
 * EMBEDDED_DB=postgres: the server in DATA_DIR/pg, shared by Signet processes, gone with the last of
 * them, whether that one closed or was killed. Other processes are real child processes.
 */
const DRIVER = pathToFileURL(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'src', 'db', 'embedded-postgres.ts')).href;
const unavailable = await embeddedPostgresUnavailable();
const skip = unavailable ? `embedded PostgreSQL unavailable here: ${unavailable}` : false;

const dirs: string[] = [];
const children: ChildProcess[] = [];
const newDataDir = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'signet-embedded-pg-'));
  dirs.push(dir);
  return dir;
};

after(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  // Whatever a failed test left running on our directories: stopped before its files are removed.
  for (const dir of dirs) {
    try {
      const pid = Number(readFileSync(path.join(dir, 'pg', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
      process.kill(pid, 'SIGINT');
      await waitGone(pid);
    } catch {
      // No server there.
    }
    rmSync(dir, { recursive: true, force: true });
  }
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Liveness, not speed: the bound only keeps a broken build from hanging the suite. */
async function waitGone(pid: number, boundMs = 30_000): Promise<boolean> {
  const deadline = Date.now() + boundMs;
  while (alive(pid) && Date.now() < deadline) await sleep(50);
  return !alive(pid);
}

async function query<T>(url: string, text: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(text)).rows as T[];
  } finally {
    await client.end();
  }
}

type Owner = { proc: ChildProcess; pid: number; started: boolean; release(): Promise<void> };

/**
 * Another Signet process: starts (or joins) the server, runs `sql`, prints what it got, and releases
 * when told to on stdin.
 */
async function otherProcess(dataDir: string, sql = 'SELECT 1'): Promise<Owner> {
  const code = `
    import { startEmbeddedPostgres } from ${JSON.stringify(DRIVER)};
    import pg from 'pg';
    import { createInterface } from 'node:readline';
    const server = await startEmbeddedPostgres(${JSON.stringify(dataDir)});
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    await client.query(${JSON.stringify(sql)});
    await client.end();
    console.log(JSON.stringify({ pid: server.pid, started: server.started }));
    for await (const line of createInterface({ input: process.stdin })) if (line === 'release') break;
    await server.release();
  `;
  const env = { ...process.env };
  delete env.NODE_TEST_CONTEXT;
  const proc = spawn(process.execPath, [...RUN_TS, '--input-type=module', '-e', code], { cwd: path.dirname(fileURLToPath(import.meta.url)), env, stdio: ['pipe', 'pipe', 'inherit'] });
  children.push(proc);
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  const first = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: proc.stdout! });
    lines.once('line', resolve);
    proc.once('exit', (c, s) => reject(new Error(`the other process exited (${c ?? s}) before it was ready`)));
  });
  const { pid, started } = JSON.parse(first) as { pid: number; started: boolean };
  return {
    proc,
    pid,
    started,
    release: async () => {
      proc.stdin!.end('release\n');
      await exited;
    },
  };
}

test('starts a server reachable only on its socket, and stops it when released', { skip }, async () => {
  const server = await startEmbeddedPostgres(newDataDir());
  try {
    assert.equal(server.started, true);
    const [settings] = await query<{ listen: string; perms: string; version: string }>(
      server.url,
      "SELECT current_setting('listen_addresses') AS listen, current_setting('unix_socket_permissions') AS perms, current_setting('server_version_num') AS version",
    );
    assert.equal(settings.listen, '', 'no TCP listener');
    assert.equal(settings.perms, '0700');
    assert.ok(Number(settings.version) >= 180000, `PostgreSQL 18 from the package, got ${settings.version}`);
  } finally {
    await server.release();
  }
  assert.equal(alive(server.pid), false, 'the last process to release stops the server');
});

test('openDatabase with embedded: postgres migrates and serves through the PostgreSQL path, and close stops the server', { skip }, async () => {
  const dataDir = newDataDir();
  const database = await openDatabase({ dataDir, embedded: 'postgres', poolSize: 4 });
  let pid: number;
  try {
    assert.equal(database.kind, 'postgres');
    assert.match(database.location, /embedded PostgreSQL/);
    await database.migrate();
    await database.ping();
    pid = Number(readFileSync(path.join(dataDir, 'pg', 'data', 'postmaster.pid'), 'utf8').split('\n')[0]);
    assert.ok(alive(pid));
  } finally {
    await database.close();
  }
  assert.equal(alive(pid), false);
});

test('a second Signet process joins the running server; the last one to leave stops it', { skip }, async () => {
  const dataDir = newDataDir();
  const owner = await otherProcess(dataDir);
  assert.equal(owner.started, true);
  const second = await startEmbeddedPostgres(dataDir);
  assert.equal(second.started, false, 'joined, not started another');
  assert.equal(second.pid, owner.pid);
  await second.release();
  assert.equal(alive(owner.pid), true, 'still used by the other process');
  await owner.release();
  assert.equal(alive(owner.pid), false);
});

test('after a SIGKILL of the only Signet process the server stops by itself, and the next start finds the data', { skip }, async () => {
  const dataDir = newDataDir();
  const owner = await otherProcess(dataDir, "CREATE TABLE kept (v text); INSERT INTO kept VALUES ('before the kill')");
  owner.proc.kill('SIGKILL');
  assert.equal(await waitGone(owner.pid), true, 'no orphaned server');
  const server = await startEmbeddedPostgres(dataDir);
  try {
    assert.equal(server.started, true);
    assert.deepEqual(await query(server.url, 'SELECT v FROM kept'), [{ v: 'before the kill' }]);
  } finally {
    await server.release();
  }
  assert.equal(alive(server.pid), false);
});

test('a postmaster.pid naming a process that is not a postgres (a reused pid) does not block the start', { skip }, async () => {
  const dataDir = newDataDir();
  const first = await startEmbeddedPostgres(dataDir);
  await first.release();
  const pidFile = path.join(dataDir, 'pg', 'data', 'postmaster.pid');
  // This test process is alive and is no postgres: what a killed server's pid reused by another program looks like.
  writeFileSync(pidFile, `${process.pid}\n${path.join(dataDir, 'pg', 'data')}\n0\n5432\n${path.join(dataDir, 'pg')}\n\n0 0\nready\n`);
  const server = await startEmbeddedPostgres(dataDir);
  try {
    assert.equal(server.started, true);
    assert.deepEqual(await query(server.url, 'SELECT 1 AS one'), [{ one: 1 }]);
  } finally {
    await server.release();
  }
});

test('a process that starts while the last one is stopping the server waits for the stop and starts it again, rather than joining a dying server', { skip }, async () => {
  const dataDir = newDataDir();
  // Dirty pages make the shutdown checkpoint take a while: the window in which another start joined the dying server.
  const owner = await otherProcess(dataDir, "CREATE TABLE kept (v int, pad text); INSERT INTO kept SELECT g, repeat('x', 200) FROM generate_series(1, 200000) g");
  const pidFile = path.join(dataDir, 'pg', 'data', 'postmaster.pid');
  const leaving = owner.release();
  let sawStopping = false;
  for (const deadline = Date.now() + 30_000; !sawStopping && Date.now() < deadline; await sleep(2)) {
    let status: string | undefined;
    try {
      status = readFileSync(pidFile, 'utf8').split('\n')[7];
    } catch {
      break; // already gone
    }
    sawStopping = status?.trim() === 'stopping';
  }
  assert.ok(sawStopping, 'the test saw the server stopping (on a much faster machine, give it more to write)');
  const server = await startEmbeddedPostgres(dataDir);
  try {
    await leaving;
    assert.equal(alive(owner.pid), false, 'the first server stopped');
    assert.equal(server.started, true, 'a new server, not the one that was stopping');
    assert.deepEqual(await query(server.url, 'SELECT count(*)::int AS n FROM kept'), [{ n: 200000 }]);
  } finally {
    await server.release();
  }
  assert.equal(alive(server.pid), false);
});

test('a lock left by a process killed while it joined or left is taken over', { skip }, async () => {
  const dataDir = newDataDir();
  const first = await startEmbeddedPostgres(dataDir);
  await first.release();
  // A process that died holding the lock: its pid is no longer alive.
  const dead = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => dead.once('exit', resolve));
  mkdirSync(path.join(dataDir, 'pg', 'lock'));
  writeFileSync(path.join(dataDir, 'pg', 'lock', 'owner'), `${dead.pid} 1`);
  const server = await startEmbeddedPostgres(dataDir);
  try {
    assert.deepEqual(await query(server.url, 'SELECT 1 AS one'), [{ one: 1 }]);
  } finally {
    await server.release();
  }
  assert.equal(existsSync(path.join(dataDir, 'pg', 'lock')), false, 'released');
});
