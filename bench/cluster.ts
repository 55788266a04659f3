/**
 * `npm run bench:cluster`: how Signet scales across API nodes. One cluster as the cluster test runs it
 * (test/cluster/cluster.ts: `node dist/cli.js serve` nodes on one PostgreSQL database of their own,
 * shared storage, Redis, nginx with deploy/nginx.conf), measured through nginx with one node behind it
 * and then with three, in the same run: authenticated reads (GET /v1/account) and create-and-send
 * (bench/run.ts's 1-page, 2-signer request). Workers are off, as in bench/run.ts. Prints req/s, p50,
 * p99 and the ratio three/one, with the load average (other work on the machine skews every figure).
 *
 *   DATABASE_URL              the PostgreSQL server (required)
 *   BENCH_DURATION            seconds per measured scenario (default 10)
 *   BENCH_WARMUP              seconds of unmeasured load before each (default 2)
 *   BENCH_CONNECTIONS         connections for reads (default 20)
 *   BENCH_CREATE_CONNECTIONS  connections for creates (default 8)
 *   BENCH_LOG_LEVEL           the nodes' LOG_LEVEL (default info, Signet's default; to files)
 *   CLUSTER_STORAGE           s3 (default), postgres or local (the first, if several are listed)
 */
import os from 'node:os';
import { startCluster } from '../test/cluster/cluster.js';
import { measure, type Row } from './load.js';
import { authed, createAndSendBody, expectStatus, textPdf, type Client } from './requests.js';

function positive(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name} must be a positive number, got "${raw}"`);
  return n;
}

const duration = positive('BENCH_DURATION', 10);
const warmup = positive('BENCH_WARMUP', 2);
const reads = { connections: Math.round(positive('BENCH_CONNECTIONS', 20)), warmup, duration };
const creates = { connections: Math.round(positive('BENCH_CREATE_CONNECTIONS', 8)), warmup, duration };
const NODES = 3;
const loadavg = () => os.loadavg().map((l) => l.toFixed(2)).join(' ');
const ms = (v: number) => (v < 1 ? '<1' : v.toFixed(0));

async function main(): Promise<void> {
  console.log(`Signet cluster bench: Node ${process.version}, ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'CPU'}; ${duration} s per scenario after ${warmup} s warm-up`);
  console.log(`Connections: ${reads.connections} for reads, ${creates.connections} for creates. Load average before the run: ${loadavg()}`);
  const cluster = await startCluster({ serveNodes: NODES, workers: 0, upstream: [0], env: { LOG_LEVEL: process.env.BENCH_LOG_LEVEL || 'info' } });
  const rows: { nodes: number; row: Row }[] = [];
  const sharing = `nginx, the nodes, PostgreSQL, Redis${cluster.storage === 's3' ? ', s3rver' : ''} and autocannon`;
  try {
    console.log(`Cluster: ${NODES} x node dist/cli.js serve (worker off), storage ${cluster.storage}, Redis, nginx (deploy/nginx.conf) at ${cluster.url}`);
    const res = await fetch(`${cluster.url}/ops/customers`, {
      method: 'POST',
      headers: { authorization: `Bearer ${cluster.opsToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'bench@example.com', name: 'Bench', creditCents: 100_000_000 }),
    });
    const c: Client = { base: cluster.url, ...(await expectStatus<{ apiKey: string }>(res, 201, 'POST /ops/customers')) };
    const upload = await createAndSendBody(await textPdf(1));
    for (const nodes of [1, NODES]) {
      await cluster.rebalance(Array.from({ length: nodes }, (_, i) => i));
      const label = `${nodes} node${nodes > 1 ? 's' : ''}`;
      rows.push({ nodes, row: await measure(`GET /v1/account, nginx -> ${label}`, 'read', { url: `${c.base}/v1/account`, headers: authed(c) }, reads) });
      rows.push({
        nodes,
        row: await measure(
          `POST /v1/envelopes create-and-send, nginx -> ${label}`,
          'create',
          { url: `${c.base}/v1/envelopes`, method: 'POST', body: upload.body, headers: authed(c, { 'content-type': upload.contentType }), idempotencyKey: true },
          creates,
        ),
      });
      console.log(`  (load average after the ${label} scenarios: ${loadavg()})`);
    }
  } finally {
    await cluster.close();
  }

  console.log('');
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'non-2xx'];
  const body = rows.map(({ row: r }) => [r.name, r.rps.toFixed(1), ms(r.p50), ms(r.p99), String(r.requests), String(r.failures)]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
  const line = (cells: string[]) => cells.map((v, i) => (i === 0 ? v.padEnd(widths[i]) : v.padStart(widths[i]))).join('  ');
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const b of body) console.log(line(b));
  console.log('');
  for (const group of ['read', 'create'] as const) {
    const one = rows.find((r) => r.nodes === 1 && r.row.group === group)!.row;
    const three = rows.find((r) => r.nodes === NODES && r.row.group === group)!.row;
    console.log(`Ratio ${NODES} nodes / 1 node, ${group === 'read' ? 'GET /v1/account' : 'create-and-send'}: ${(three.rps / one.rps).toFixed(2)}x (${three.rps.toFixed(1)} / ${one.rps.toFixed(1)} req/s)`);
  }
  console.log(`Load average after the run: ${loadavg()} (${os.cpus().length} CPUs shared by ${sharing})`);
  const failed = rows.filter(({ row: r }) => r.failures > 0 || r.requests === 0);
  if (failed.length) {
    console.error(`\nSome responses were not 2xx, or none came: ${failed.map(({ row: r }) => r.name).join(', ')}; the figures above are not comparable.`);
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
