/**
 * CPU time from /proc (Linux): of one server process, all its threads (the PDF workers, libuv's pool
 * and the garbage collector's helpers included), and of every PostgreSQL process on the machine. Taken
 * around a measured run, it tells where a route's cost goes, which req/s alone cannot: Node or the
 * database. Off Linux there is no /proc and the figures are left out.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';

export type CpuSnapshot = { serverMs: number; dbMs: number };

let ticksPerSecond: number | undefined;
function msPerTick(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return 1000 / ticksPerSecond;
}

/**
 * utime + stime of a process in clock ticks, cutime + cstime (its children's, once they exited and it
 * reaped them), and its command name; undefined once it is gone.
 */
function stat(pid: string): { comm: string; ticks: number; reapedTicks: number } | undefined {
  try {
    const line = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The name is in parentheses and may hold spaces: the fields after it are counted from its end.
    const fields = line.slice(line.lastIndexOf(')') + 2).split(' ');
    return { comm: line.slice(line.indexOf('(') + 1, line.lastIndexOf(')')), ticks: Number(fields[11]) + Number(fields[12]), reapedTicks: Number(fields[13]) + Number(fields[14]) };
  } catch {
    return undefined;
  }
}

/**
 * CPU used so far by `pid` and by the PostgreSQL processes; undefined without a pid or /proc. A backend
 * or autovacuum worker that exits during the run leaves its time to the postmaster, which reaps it: the
 * reaped time counts, or the sum would drop.
 */
export function cpuSnapshot(pid: number | undefined): CpuSnapshot | undefined {
  const server = pid === undefined ? undefined : stat(String(pid));
  if (!server) return undefined;
  let db = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const s = stat(entry);
    if (s?.comm === 'postgres') db += s.ticks + s.reapedTicks;
  }
  return { serverMs: server.ticks * msPerTick(), dbMs: db * msPerTick() };
}

/** utime + stime of one process so far, in milliseconds (its own threads; not its children); 0 once it is gone. */
export function processCpuMs(pid: number): number {
  return (stat(String(pid))?.ticks ?? 0) * msPerTick();
}

/** Milliseconds of CPU per answered request between two snapshots. */
export function cpuPerRequest(before: CpuSnapshot | undefined, after: CpuSnapshot | undefined, requests: number): CpuSnapshot | undefined {
  if (!before || !after || requests <= 0) return undefined;
  return { serverMs: (after.serverMs - before.serverMs) / requests, dbMs: (after.dbMs - before.dbMs) / requests };
}
