/**
 * The end of `npm run bench`'s output: what the floors leave out and what it costs (the two
 * configurations side by side), and the goals of issue 38, each met or NOT met.
 */
import { CONFIG_LABEL, placeLabel, type SignetConfig } from './configs.js';
import type { CompletionResult } from './completion.js';
import type { Row } from './load.js';
import { DB_LABEL, type DbKind } from './servers.js';

/** A row against its floor: measured in turns with it (the rounds' median), else against the floor's own row. */
export const floorRatio = (r: Row) => r.paired?.ratio ?? r.rps / r.floor!.rps;

const bare = (name: string) => name.replace(/^Signet /, '').replace(/ \([^)]*\)$/, '');
const rowsAt = (rows: Row[], kind: DbKind, config: SignetConfig) => rows.filter((r) => r.name.endsWith(`(${placeLabel(kind, config)})`));

/**
 * The floors do no job and send no email; an API node leaves both to a worker process, `npm start` does
 * them itself. Per create row: the server's CPU per request in each configuration (npm start's counted
 * until the queue drained), the difference being the distribution job and the two invitation emails.
 */
export function configCostLines(rows: Row[], kinds: DbKind[]): string[] {
  const lines: string[] = [];
  for (const kind of kinds) {
    const api = rowsAt(rows, kind, 'api');
    for (const s of rowsAt(rows, kind, 'start')) {
      const a = api.find((r) => bare(r.name) === bare(s.name));
      if (!a?.cpu || !s.cpu) continue;
      const jobs = s.group === 'create' ? `: the jobs and emails it causes cost ${(s.cpu.serverMs - a.cpu.serverMs).toFixed(2)} ms (drained ${(s.drainSeconds ?? 0).toFixed(1)} s after the load)` : '';
      lines.push(`  ${DB_LABEL[kind].padEnd(10)} ${bare(s.name)}: CPU ms/req ${a.cpu.serverMs.toFixed(2)} (${CONFIG_LABEL.api}) vs ${s.cpu.serverMs.toFixed(2)} (${CONFIG_LABEL.start})${jobs}`);
    }
  }
  return lines;
}

export type GoalInputs = {
  rows: Row[];
  kinds: DbKind[];
  configs: SignetConfig[];
  completion: Map<DbKind, CompletionResult>;
  uploads: Map<DbKind, { ratio: number }>;
  /** Idle RSS in kB of npm start's server per store. */
  idleRss: Map<DbKind, number | undefined>;
};

/** 200 MB, decimal: the stricter reading of the figure (190.7 MiB). */
const RSS_GOAL_KB = 200e6 / 1024;
const CREATE_GOAL: Record<SignetConfig, number> = { api: 0.33, start: 0.25 };

export function printGoals(g: GoalInputs): void {
  console.log('\nGoals (issue 38):');
  const goal = (where: string, text: string, met: boolean) => console.log(`  ${where.padEnd(22)} ${text}: ${met ? 'met' : 'NOT met'}`);
  for (const kind of g.kinds) {
    for (const config of g.configs) {
      for (const r of rowsAt(g.rows, kind, config).filter((r) => r.floor && (r.group === 'read' || r.group === 'create') && !r.name.includes(' MCP '))) {
        const [min, what] = r.group === 'read' ? [0.8, 'read'] : [CREATE_GOAL[config], 'create'];
        const each = (r.paired?.ratios.length ?? 0) > 1 ? `, median of ${r.paired!.ratios.map((x) => x.toFixed(2)).join(' ')}` : '';
        goal(placeLabel(kind, config), `${what} ${bare(r.name)}: ${floorRatio(r).toFixed(3)} of its floor (>= ${min}${each})`, floorRatio(r) >= min);
      }
    }
  }
  for (const [kind, kb] of g.idleRss) {
    const where = kind === 'pglite' ? 'npm start (embedded)' : 'PostgreSQL mode';
    if (kb !== undefined) goal(where, `idle RSS ${((kb * 1024) / 1e6).toFixed(0)} MB (< 200 MB)`, kb < RSS_GOAL_KB);
  }
  for (const [kind, u] of g.uploads) goal(DB_LABEL[kind], `upload RSS ${u.ratio.toFixed(2)}x the file above idle (< 2x)`, u.ratio < 2);
  if (g.completion.size) console.log('Earlier goals (issue 14):');
  for (const [kind, c] of g.completion) goal(DB_LABEL[kind], `completion p50 ${c.p50.toFixed(0)} ms (<= 100 ms)`, c.p50 <= 100);
}
