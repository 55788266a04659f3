/**
 * The two ways Signet runs that the bench measures (issue 38: measure what a user runs):
 * - `api`: an API node, `signet serve` with WORKER_ENABLED=false, as beside separate `signet worker`
 *   processes: its create rows leave each envelope's distribution job and two invitation emails to
 *   another process;
 * - `start`: what `npm start` runs, `signet serve` with its worker in process: the create rows wait
 *   until the jobs they caused are done (the queue drained), so their rate and CPU include them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { DB_LABEL, OPS_TOKEN, type DbKind } from './servers.js';

export type SignetConfig = 'api' | 'start';
export const CONFIG_LABEL: Record<SignetConfig, string> = { api: 'API node', start: 'npm start' };
export const CONFIG_ENV: Record<SignetConfig, Record<string, string>> = { api: { WORKER_ENABLED: 'false' }, start: { WORKER_ENABLED: 'true' } };

/** How a row names where it ran: `(PostgreSQL, API node)`. */
export const placeLabel = (kind: DbKind, config: SignetConfig) => `${DB_LABEL[kind]}, ${CONFIG_LABEL[config]}`;

export function signetConfigs(): SignetConfig[] {
  const wanted = process.env.BENCH_CONFIG || 'both';
  if (wanted === 'both') return ['api', 'start'];
  if (wanted === 'api' || wanted === 'start') return [wanted];
  throw new Error(`BENCH_CONFIG must be api, start or both, got "${wanted}"`);
}

/** Jobs due or running, from GET /metrics (the operator's bearer); undefined when the scrape did not read the queue. */
async function jobsLeft(base: string): Promise<number | undefined> {
  const res = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${OPS_TOKEN}` } });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET /metrics answered ${res.status}: ${text.slice(0, 200)}`);
  if (!/^signet_job_stats_ok 1$/m.test(text)) return undefined;
  let left = 0;
  for (const m of text.matchAll(/^signet_(?:job_queue_depth|jobs_running)\{[^}]*\} (\d+(?:\.\d+)?)$/gm)) left += Number(m[1]);
  return left;
}

/** Resolves once no job is due or running on the server (polled every 50 ms; 120 s at most). */
export function drainer(base: string): () => Promise<void> {
  return async () => {
    const deadline = Date.now() + 120_000;
    for (;;) {
      if ((await jobsLeft(base)) === 0) return;
      if (Date.now() > deadline) throw new Error('the job queue did not drain in 120 s');
      await sleep(50);
    }
  };
}
