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

/**
 * Where a sample's time goes by component: the first frame, leaf first, whose script matches one of
 * these (a native or Node-internal leaf, a socket write or an fs call, counts for the code that called
 * it). Samples no rule claims keep their leaf's name (mostly libuv callbacks of fs promises).
 */
const COMPONENTS: [RegExp, string][] = [
  [/node_modules\/(pg|pg-protocol|pg-pool|pg-types|postgres-[a-z]+)\//, 'pg client: statements, socket writes, results'],
  [/node_modules\/drizzle-orm\//, 'drizzle: building statements, mapping rows'],
  [/node_modules\/zod\//, 'zod'],
  [/node_modules\/(pino|sonic-boom|thread-stream)\//, 'pino: access log'],
  [/node_modules\/(@fastify\/busboy|busboy|streamsearch)\/|src\/http\/multipart/, 'multipart streaming and hashing'],
  [/node_modules\/nodemailer\/|src\/providers\/email\//, 'emails: rendering, composing, outbox writes'],
  [/src\/providers\/storage\//, 'storage: file moves, writes and fsyncs'],
  [/src\/pdf\//, 'PDF parse: queue and worker messages (the worker itself is not profiled)'],
  [/src\/http\/idempotency/, 'idempotency'],
  [/src\/modules\/audit\//, 'audit'],
  [/src\/modules\/webhooks\//, 'webhook fan-out'],
  [/src\/modules\/billing\//, 'billing'],
  [/src\/jobs\//, 'job queue and worker'],
  [/src\/engine\//, 'local engine'],
  [/src\/modules\/envelopes\/|src\/modules\/templates\//, 'envelopes and templates modules'],
  [/src\/http\//, 'per-request features (auth, metrics, headers, log)'],
  [/node_modules\/(fastify|find-my-way|@fastify|avvio|fast-json-stringify|secure-json-parse)\//, 'fastify'],
  [/src\//, 'other project code'],
  [/node_modules\//, 'other libraries'],
];
const SPECIAL = new Set(['(garbage collector)', '(program)', '(idle)', '(root)']);

/** Busy time (every profiled thread, idle excluded) by component, largest first, inside the windows. */
export function byComponent(profiles: ThreadProfile[], windows: [number, number][]): { component: string; fraction: number }[] {
  const total = new Map<string, number>();
  let busy = 0;
  for (const { thread, profile: p } of profiles) {
    const nodes = new Map(p.nodes.map((n) => [n.id, n as { id: number; callFrame: CallFrame; children?: number[] }]));
    const parent = new Map<number, number>();
    for (const n of nodes.values()) for (const c of n.children ?? []) parent.set(c, n.id);
    const memo = new Map<number, string>();
    const componentOf = (id: number): string => {
      const known = memo.get(id);
      if (known) return known;
      const { callFrame: f } = nodes.get(id)!;
      const up = parent.get(id);
      const c = SPECIAL.has(f.functionName) ? f.functionName : (COMPONENTS.find(([re]) => re.test(f.url))?.[1] ?? (up === undefined ? '(root)' : componentOf(up)));
      memo.set(id, c);
      return c;
    };
    let t = p.startTime;
    for (let i = 0; i < p.samples.length; i++) {
      t += p.timeDeltas[i];
      const us = i + 1 < p.timeDeltas.length ? p.timeDeltas[i + 1] : 0;
      if (us <= 0 || !windows.some(([a, b]) => t >= a && t < b)) continue;
      let c = componentOf(p.samples[i]);
      if (c === '(idle)') continue;
      if (c === '(root)') c = `unclaimed: ${nodes.get(p.samples[i])!.callFrame.functionName || '(anonymous)'}`;
      if (thread !== 0) c += ` [thread ${thread}]`;
      busy += us;
      total.set(c, (total.get(c) ?? 0) + us);
    }
  }
  return [...total].sort((a, b) => b[1] - a[1]).map(([component, us]) => ({ component, fraction: busy ? us / busy : 0 }));
}

export function formatComponents(title: string, parts: { component: string; fraction: number }[], min = 0.005): string {
  const shown = parts.filter((p) => p.fraction >= min);
  return [title, ...shown.map((p) => `  ${(p.fraction * 100).toFixed(1).padStart(5)}%  ${p.component}`)].join('\n');
}
