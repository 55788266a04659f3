/**
 * Two trees' reads side by side, in turns (`npm run bench` measures one tree against its floors): the
 * same `signet serve` from tree A and from tree B, LOG_LEVEL=info, each on its own fresh schema, then
 * rounds of GET /v1/account and GET /v1/envelopes/{id}/status on A, then B, then B, then A, ... and
 * the server's CPU milliseconds per request of each over all its rounds. On a shared machine, whose
 * load moves by the minute, short alternating rounds compare two changes better than two bench runs.
 *
 *   npx tsx bench/ab-reads.ts <tree A> <tree B>   (BENCH_CONFIG api|start, AB_ROUNDS 6, AB_SECONDS 4)
 *   DATABASE_URL  PostgreSQL (each tree gets a schema of it); unset: PGlite
 */
import path from 'node:path';
import { CONFIG_ENV, type SignetConfig } from './configs.js';
import { measure, type LoadRequest } from './load.js';

const trees = process.argv.slice(2, 4).map((t) => path.resolve(t));
if (trees.length !== 2) throw new Error('usage: tsx bench/ab-reads.ts <tree A> <tree B>');
const config = (process.env.BENCH_CONFIG ?? 'api') as SignetConfig;
const rounds = Number(process.env.AB_ROUNDS ?? 6);
const seconds = Number(process.env.AB_SECONDS ?? 4);
const databaseUrl = process.env.DATABASE_URL;
const kind = databaseUrl ? 'postgres' : 'pglite';

type Side = { name: string; pid: number; stop(): Promise<void>; reqs: Record<string, LoadRequest>; cpuMs: Record<string, number>; n: Record<string, number> };
const sides: Side[] = [];
for (const [i, tree] of trees.entries()) {
  // Each tree's own bench helpers: its ROOT is where `signet serve` starts.
  const servers = await import(path.join(tree, 'bench', 'servers.ts'));
  const mcp = await import(path.join(tree, 'bench', 'mcp.ts'));
  const server = await servers.startSignet(kind, databaseUrl, { env: { LOG_LEVEL: 'info', ...CONFIG_ENV[config] } });
  const c = { base: server.base, ...(await servers.createCustomer(server.base)) };
  const { rest } = await mcp.statusRequests(c);
  sides.push({
    name: `${'AB'[i]} ${tree}`,
    pid: server.pid,
    stop: server.stop,
    reqs: { account: { url: `${c.base}/v1/account`, headers: { authorization: `Bearer ${c.apiKey}` } }, status: rest },
    cpuMs: { account: 0, status: 0 },
    n: { account: 0, status: 0 },
  });
}
const load = (await import('node:os')).loadavg();
try {
  for (let r = 0; r < rounds; r++) {
    // A B, then B A: neither side always runs first.
    for (const side of r % 2 === 0 ? sides : [...sides].reverse()) {
      for (const route of ['account', 'status']) {
        const row = await measure(`${side.name} ${route} round ${r + 1}`, 'read', side.reqs[route], { connections: 20, warmup: 1, duration: seconds, pid: side.pid });
        if (row.failures) throw new Error(`${row.failures} failures`);
        side.cpuMs[route] += (row.cpu?.serverMs ?? NaN) * row.requests;
        side.n[route] += row.requests;
        process.stderr.write(`    ${row.rps.toFixed(0)} req/s, ${row.cpu?.serverMs.toFixed(3)} ms CPU/req\n`);
      }
    }
  }
} finally {
  for (const s of sides) await s.stop();
}
console.log(`load average before: ${load.map((l) => l.toFixed(2)).join(' ')}, after: ${(await import('node:os')).loadavg().map((l) => l.toFixed(2)).join(' ')}`);
for (const s of sides) console.log(`${s.name}: account ${(s.cpuMs.account / s.n.account).toFixed(4)} ms CPU/req (${s.n.account} requests), status ${(s.cpuMs.status / s.n.status).toFixed(4)} ms CPU/req (${s.n.status})`);
