import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

/**
 * The Signet processes that share one embedded PostgreSQL server (embedded-postgres.ts): each one's
 * registration in DATA_DIR/pg/clients, the lock that orders joining, leaving and stopping, and the
 * watchdog that stops the server once they are all gone.
 */

/** A holder of the lock starts or stops the server at most (60 s to answer, 60 s to stop): a waiter gives up after both and a margin. */
const LOCK_TIMEOUT_MS = 130_000;
/** A lock whose maker died before naming itself in it. */
const UNNAMED_LOCK_STALE_MS = 10_000;

export const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: alive, owned by another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** The process's start time from /proc (pids are reused; the pair is not); '' where there is no /proc. */
function startTime(pid: number): string {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19] ?? '';
  } catch {
    return '';
  }
}

/**
 * A process that is SIGKILLed cannot stop the server; this watchdog (a detached shell, about 1 MB) does
 * it for the last one: once no registered Signet process is alive (its pid alive with the start time
 * its file records: pids are reused), it takes the lock, looks again, and stops the server; it ends
 * with the server whatever stopped it (waiting 60 s at most for it to stop, as release does). The lock
 * is busy while a process joins or leaves: it looks again 2 s later.
 */
const REAPER = `pg=$1 clients=$2 lock=$3
started() { s=$(cat "/proc/$1/stat" 2>/dev/null) || return 0; s=\${s##*) }; set -- $s; shift 19; echo "$1"; }
live() { kill -0 "$1" 2>/dev/null && [ "$(started "$1")" = "$(cat "$2" 2>/dev/null)" ]; }
anyone() { for f in "$clients"/*; do [ -e "$f" ] && live "\${f##*/}" "$f" && return 0; done; return 1; }
while sleep 2; do
  kill -0 "$pg" 2>/dev/null || exit 0
  anyone && continue
  mkdir "$lock" 2>/dev/null || continue
  echo "$$" > "$lock/owner"
  if anyone; then rm -rf "$lock"; continue; fi
  kill -INT "$pg"
  n=0; while kill -0 "$pg" 2>/dev/null && [ $n -lt 600 ]; do sleep 0.1; n=$((n + 1)); done
  rm -rf "$lock"; exit 0
done`;

export function startReaper(pid: number, clients: string, lock: string): void {
  spawn('/bin/sh', ['-c', REAPER, 'signet-pg-reaper', String(pid), clients, lock], { detached: true, stdio: 'ignore' }).unref();
}

/** Whether the lock's holder is gone: its pid dead or reused, or it never named itself and the lock is old. */
function staleLock(lock: string): boolean {
  let owner: string;
  try {
    owner = readFileSync(path.join(lock, 'owner'), 'utf8');
  } catch {
    try {
      return Date.now() - statSync(lock).mtimeMs > UNNAMED_LOCK_STALE_MS;
    } catch {
      return false; // released meanwhile
    }
  }
  const [pid, started] = owner.trim().split(' ');
  // The watchdog names itself by pid only.
  return !alive(Number(pid)) || (started !== undefined && started !== startTime(Number(pid)));
}

/**
 * Runs `work` holding DATA_DIR/pg/lock (a directory: mkdir is atomic), waiting for it while another
 * process holds it. A holder that died (SIGKILL mid-start) leaves it stale: the next one removes it.
 */
export async function withLock<T>(lock: string, work: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + LOCK_TIMEOUT_MS;
  for (;;) {
    try {
      mkdirSync(lock, { mode: 0o700 });
      writeFileSync(path.join(lock, 'owner'), `${process.pid} ${startTime(process.pid)}`);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    if (staleLock(lock)) rmSync(lock, { recursive: true, force: true });
    else if (Date.now() > deadline) throw new Error(`${lock} is held by another process (${LOCK_TIMEOUT_MS / 1000} s): if no Signet process is starting or stopping, remove it`);
    else await sleep(25);
  }
  try {
    return await work();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/** Signet processes using the server: one file per process, named by pid, holding its start time. */
export function register(clients: string): () => boolean {
  mkdirSync(clients, { recursive: true, mode: 0o700 });
  const mine = path.join(clients, String(process.pid));
  writeFileSync(mine, startTime(process.pid));
  /** Unregisters; true when no other live Signet process is registered. */
  return () => {
    rmSync(mine, { force: true });
    let others = 0;
    for (const name of readdirSync(clients)) {
      const pid = Number(name);
      const file = path.join(clients, name);
      let recorded = '';
      try {
        recorded = readFileSync(file, 'utf8');
      } catch {
        continue;
      }
      if (Number.isInteger(pid) && alive(pid) && recorded === startTime(pid)) others++;
      else rmSync(file, { force: true }); // a process that was killed
    }
    return others === 0;
  };
}
