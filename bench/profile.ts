/**
 * BENCH_PROFILE=1: the Signet server runs under `node --cpu-prof`; this reads the .cpuprofile it
 * writes on exit and ranks functions by self time inside given windows of the monotonic clock (V8
 * stamps samples with CLOCK_MONOTONIC microseconds, as process.hrtime does here), so only the measured
 * seconds of a scenario group count, not start-up, migrations or warm-ups.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './servers.js';

type CallFrame = { functionName: string; url: string; lineNumber: number; columnNumber: number };
type CpuProfile = {
  nodes: { id: number; callFrame: CallFrame }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
};

export type ProfileSummary = {
  /** Milliseconds of main-thread samples inside the windows, and the fraction of them idle. */
  mainMs: number;
  mainIdleFraction: number;
  /** Busy milliseconds of other threads with a profile (not the PDF sandbox's: see formatSummary). */
  workerBusyMs: number;
  /** By self time, idle excluded; fraction of all busy time (every thread). */
  top: { name: string; where: string; selfMs: number; fraction: number }[];
};

type ThreadProfile = { thread: number; profile: CpuProfile };

/** Node names them CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile; thread 0 is the main thread. */
export function readProfiles(dir: string): ThreadProfile[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.cpuprofile'))
    .map((f) => ({ thread: Number(f.split('.').at(-3)), profile: JSON.parse(readFileSync(path.join(dir, f), 'utf8')) as CpuProfile }));
}

/** node_modules/<pkg>/… or a path under the project, whichever is shorter to read. */
function shortUrl(url: string): string {
  if (!url) return '';
  const file = url.replace(/^file:\/\//, '');
  const nm = file.lastIndexOf('/node_modules/');
  if (nm >= 0) return file.slice(nm + '/node_modules/'.length);
  return file.startsWith(ROOT) ? path.relative(ROOT, file) : file;
}

/** Self time per function (name + script + line) over the samples that fall in any window. */
export function summarize(profiles: ThreadProfile[], windows: [number, number][], topN = 15): ProfileSummary {
  const self = new Map<string, { name: string; where: string; us: number }>();
  const sum = { mainUs: 0, mainIdleUs: 0, workerBusyUs: 0, busyUs: 0 };
  for (const { thread, profile: p } of profiles) {
    const frames = new Map(p.nodes.map((n) => [n.id, n.callFrame]));
    let t = p.startTime;
    for (let i = 0; i < p.samples.length; i++) {
      t += p.timeDeltas[i];
      // A sample stands for the time until the next one.
      const us = i + 1 < p.timeDeltas.length ? p.timeDeltas[i + 1] : 0;
      if (us <= 0 || !windows.some(([a, b]) => t >= a && t < b)) continue;
      const f = frames.get(p.samples[i]);
      if (!f) continue;
      const idle = f.functionName === '(idle)';
      if (thread === 0) {
        sum.mainUs += us;
        if (idle) sum.mainIdleUs += us;
      } else if (!idle) sum.workerBusyUs += us;
      if (idle) continue;
      sum.busyUs += us;
      const where = `${f.url ? `${shortUrl(f.url)}:${f.lineNumber + 1}` : ''}${thread === 0 ? '' : ` [thread ${thread}]`}`;
      const key = `${f.functionName}\u0000${where}`;
      const entry = self.get(key) ?? { name: f.functionName || '(anonymous)', where, us: 0 };
      entry.us += us;
      self.set(key, entry);
    }
  }
  const top = [...self.values()]
    .sort((a, b) => b.us - a.us)
    .slice(0, topN)
    .map((e) => ({ name: e.name, where: e.where, selfMs: e.us / 1000, fraction: sum.busyUs ? e.us / sum.busyUs : 0 }));
  return {
    mainMs: sum.mainUs / 1000,
    mainIdleFraction: sum.mainUs ? sum.mainIdleUs / sum.mainUs : 0,
    workerBusyMs: sum.workerBusyUs / 1000,
    top,
  };
}

export function formatSummary(title: string, s: ProfileSummary): string {
  if (!s.mainMs) return `${title}: no samples inside the measured windows`;
  // The PDF sandbox starts its threads with execArgv [] (no --cpu-prof): its work is not in here.
  const workers = s.workerBusyMs >= 1 ? `; other threads busy ${(s.workerBusyMs / 1000).toFixed(1)} s` : '';
  const lines = [`${title}`, `  main thread: ${(s.mainMs / 1000).toFixed(1)} s sampled, ${(s.mainIdleFraction * 100).toFixed(1)}% idle${workers}; share of busy time:`];
  const width = Math.max(...s.top.map((e) => e.name.length), 8);
  for (const e of s.top) lines.push(`  ${(e.fraction * 100).toFixed(1).padStart(5)}%  ${e.selfMs.toFixed(0).padStart(6)} ms  ${e.name.padEnd(width)}  ${e.where}`);
  return lines.join('\n');
}
