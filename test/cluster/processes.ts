/**
 * Child processes of the cluster test and bench: `node dist/cli.js serve|worker`, nginx and s3rver,
 * each logging to a file of its own (appended across restarts, so a failure can show what a node
 * said before and after it was killed), never through a pipe this process must drain.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readFileSync, statSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { assertSameRuntime } from '../fixtures/runtime.js';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

export type Role = 'serve' | 'worker';

/** A node the test can kill and start again on the same port with the same environment. */
export type Node = {
  name: string;
  role: Role;
  /** serve: the port it listens on (loopback). */
  port?: number;
  /** http://127.0.0.1:port for a serve node. */
  base?: string;
  up(): boolean;
  /** Spawns it and resolves once it serves (/health 200) or its worker started. */
  start(): Promise<void>;
  /** Sends `signal` and resolves once it exited. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** SIGINT, SIGKILL after 15 s. */
  stop(): Promise<void>;
  starts: number;
  logFile: string;
  /** Exits nobody asked for (a crash), each with the end of what that run logged. */
  crashes: string[];
};

/** A free loopback port (closed again at once: the caller binds it next). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Every child still running: stopped should this process exit or be interrupted before its cleanup
 * ran. SIGTERM, not SIGKILL: nginx's master takes its workers with it only when asked.
 */
const children = new Set<ChildProcess>();
const killChildren = () => {
  for (const c of children) c.kill('SIGTERM');
};
const onInterrupt = new Set<() => Promise<void>>();
let interrupted = false;
process.once('exit', killChildren);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  // Ctrl-C reaches the test file twice (SIGINT from the terminal, SIGTERM from the test runner): one cleanup.
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    killChildren();
    // The rest of the cleanup (the database, the temporary files), 15 s at most.
    const cleanups = Promise.allSettled([...onInterrupt].map((fn) => fn()));
    void Promise.race([cleanups, sleep(15_000)]).finally(() => process.exit(130));
  });
}

/** Runs `fn` should the process be interrupted (SIGINT, SIGTERM); call the answer to take it back. */
export function cleanupOnInterrupt(fn: () => Promise<void>): () => void {
  onInterrupt.add(fn);
  return () => void onInterrupt.delete(fn);
}

export function spawnLogged(command: string, args: string[], env: NodeJS.ProcessEnv, logFile: string): { child: ChildProcess; exited: Promise<void> } {
  const fd = openSync(logFile, 'a');
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  children.add(child);
  const exited = new Promise<void>((resolve) => {
    const done = () => (children.delete(child), resolve());
    child.once('exit', done);
    // A command that cannot be spawned (nginx missing) errs instead of exiting.
    child.once('error', (err) => (console.error(`${command}: ${err.message}`), done()));
  });
  return { child, exited };
}

/** The log from `offset` on (what the current run of a process wrote). */
function readFrom(file: string, offset: number): string {
  if (!existsSync(file)) return '';
  return readFileSync(file).subarray(offset).toString('utf8');
}

export function tail(file: string, lines = 40): string {
  return readFrom(file, 0).split('\n').slice(-lines).join('\n');
}

const alive = (c: ChildProcess | undefined) => !!c && c.exitCode === null && c.signalCode === null;

/** Resolves once something accepts TCP connections on 127.0.0.1:port. */
export async function waitForPort(port: number, timeoutMs: number, what: string, isDead: () => boolean = () => false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const s = connect(port, '127.0.0.1');
      s.once('connect', () => (s.destroy(), resolve(true)));
      s.once('error', () => resolve(false));
    });
    if (ok) return;
    if (isDead()) throw new Error(`${what} exited before listening on ${port}`);
    if (Date.now() > deadline) throw new Error(`${what} did not listen on ${port} in ${timeoutMs} ms`);
    await sleep(50);
  }
}

/**
 * `node dist/cli.js <role>` with `env`. A serve node is ready when it printed its `listening on` line
 * and /health answers 200; a worker when it printed `worker … started`.
 */
export function signetNode(name: string, role: Role, env: NodeJS.ProcessEnv, logFile: string, port?: number, startTimeoutMs = 180_000): Node {
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let stopping = false;
  const ready = role === 'serve' ? /listening on http:\/\// : /worker \S+ started/;
  const node: Node = {
    name,
    role,
    port,
    base: port ? `http://127.0.0.1:${port}` : undefined,
    starts: 0,
    logFile,
    crashes: [],
    up: () => alive(child),
    async start() {
      if (alive(child)) throw new Error(`${name} is already running`);
      const offset = existsSync(logFile) ? statSync(logFile).size : 0;
      ({ child, exited } = spawnLogged(process.execPath, [path.join(ROOT, 'dist', 'cli.js'), role], env, logFile));
      node.starts++;
      stopping = false;
      const me = child;
      me.once('exit', (code, signal) => {
        if (!stopping) node.crashes.push(`${name} exited by itself (${code ?? signal}):\n${readFrom(logFile, offset).split('\n').slice(-20).join('\n')}`);
      });
      const deadline = Date.now() + startTimeoutMs;
      while (!ready.test(readFrom(logFile, offset))) {
        if (!alive(me)) throw new Error(`${name} exited (${me.exitCode ?? me.signalCode}) while starting:\n${readFrom(logFile, offset)}`);
        if (Date.now() > deadline) throw new Error(`${name} did not start in ${startTimeoutMs} ms:\n${readFrom(logFile, offset)}`);
        await sleep(50);
      }
      assertSameRuntime(readFrom(logFile, offset), name);
      if (role === 'serve') {
        for (;;) {
          const res = await fetch(`${node.base}/health`).catch(() => undefined);
          await res?.arrayBuffer();
          if (res?.status === 200) break;
          if (!alive(me) || Date.now() > deadline) throw new Error(`${name}: /health answered ${res?.status ?? 'nothing'}:\n${readFrom(logFile, offset)}`);
          await sleep(100);
        }
      }
    },
    async kill(signal = 'SIGKILL') {
      stopping = true;
      if (alive(child)) child!.kill(signal);
      await exited;
    },
    async stop() {
      stopping = true;
      if (!alive(child)) return;
      // SIGINT: a clean stop without SIGTERM's drain wait (README: readiness and draining).
      child!.kill('SIGINT');
      const force = setTimeout(() => child!.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(force);
    },
  };
  return node;
}
