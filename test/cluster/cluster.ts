/**
 * A Signet cluster on loopback, as README's "Running a cluster" describes it: `signet serve` nodes and
 * `signet worker` processes (the built code, dist/cli.js) around one PostgreSQL database of their own
 * (created on DATABASE_URL's server, dropped after), shared object storage (s3rver by default), Redis
 * for the shared rate-limit counters, and nginx in front with deploy/nginx.conf. Used by
 * test/cluster/cluster.test.ts and bench/cluster.ts.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import pg from 'pg';
import { generateDevP12 } from '../../src/providers/certs/signer.js';
import { cleanupOnInterrupt, freePort, ROOT, signetNode, spawnLogged, tail, waitForPort, type Node } from './processes.js';

export type StorageKind = 's3' | 'postgres' | 'local';

export type ClusterOptions = {
  serveNodes: number;
  workers: number;
  /** Extra environment of every node (overrides the defaults below). */
  env?: Record<string, string>;
  /** Which serve nodes nginx balances over (default: all); the bench puts one node alone behind it. */
  upstream?: number[];
  /** Where documents are kept (default: the first of CLUSTER_STORAGE, else s3). */
  storage?: StorageKind;
};

export type Cluster = {
  /** nginx: http://127.0.0.1:port */
  url: string;
  serves: Node[];
  workers: Node[];
  nodes: Node[];
  opsToken: string;
  storage: StorageKind;
  /** The cluster's own database (the test reads the ledger and the queue directly). */
  pool: pg.Pool;
  /** nginx's error log: what it saw of the nodes (refused connections, answers cut off). */
  nginxErrorLog: string;
  /** Starts nginx again over other serve nodes (by index), on the same port. */
  rebalance(upstream: number[]): Promise<void>;
  /** The last lines of every log, for a failure message. */
  logs(lines?: number): string;
  close(): Promise<void>;
};

export const OPS_TOKEN = 'cluster-ops-token-0123456789abcdef';
export const NGINX_TEMPLATE = path.join(ROOT, 'deploy', 'nginx.conf');
/** Debian's nginx lives in /usr/sbin, which an ordinary user's PATH may lack. */
export const NGINX = existsSync('/usr/sbin/nginx') ? '/usr/sbin/nginx' : 'nginx';

/**
 * CLUSTER_STORAGE: the stores to run on, comma-separated, `fallback` when unset. s3 (s3rver),
 * postgres (the database's blob tables), or local (one DATA_DIR shared by every node).
 */
export function storageKinds(fallback: StorageKind[]): StorageKind[] {
  const wanted = process.env.CLUSTER_STORAGE ? process.env.CLUSTER_STORAGE.split(',').map((k) => k.trim()) : fallback;
  const bad = wanted.find((k) => k !== 's3' && k !== 'postgres' && k !== 'local');
  if (bad !== undefined || wanted.length === 0) throw new Error(`CLUSTER_STORAGE must list s3, postgres or local (comma-separated), got "${process.env.CLUSTER_STORAGE}"`);
  return wanted as StorageKind[];
}

/** deploy/nginx.conf with our port and one `server` line per upstream port, each keeping the file's parameters. */
export function nginxConfig(template: string, listenPort: number, upstreamPorts: number[]): string {
  const servers = /^(\s*)server 127\.0\.0\.1:\d+( [^;\n]*)?;[^\n]*\n/gm;
  const first = servers.exec(template);
  const listen = /^(\s*)listen 127\.0\.0\.1:\d+;/m;
  if (!first || !listen.test(template)) throw new Error(`${NGINX_TEMPLATE} lost the shape the cluster test templates: "listen 127.0.0.1:PORT;" and "server 127.0.0.1:PORT …;" lines`);
  const [, indent, params = ''] = first;
  let placed = false;
  return template
    .replace(listen, (_m, i: string) => `${i}listen 127.0.0.1:${listenPort};`)
    .replace(servers, () => {
      if (placed) return '';
      placed = true;
      return upstreamPorts.map((p) => `${indent}server 127.0.0.1:${p}${params};\n`).join('');
    });
}

async function createDatabase(serverUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = `signet_cluster_${randomBytes(5).toString('hex')}`;
  const admin = new pg.Client({ connectionString: serverUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new pg.Client({ connectionString: serverUrl });
      await c.connect();
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** REDIS_URL (or 127.0.0.1:6379), checked; the cluster's keys get a prefix of their own (REDIS_KEY_PREFIX) and nothing is flushed. */
async function redisUrl(): Promise<string> {
  const url = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    throw new Error(`the cluster test needs Redis at ${url} (REDIS_URL): ${(err as Error).message}`);
  } finally {
    client.disconnect();
  }
  return url;
}

export async function startCluster(opts: ClusterOptions): Promise<Cluster> {
  const serverUrl = process.env.DATABASE_URL;
  if (!serverUrl) throw new Error('the cluster runs on PostgreSQL: set DATABASE_URL (its database is created and dropped on that server)');
  if (!existsSync(path.join(ROOT, 'dist', 'cli.js'))) throw new Error('dist/cli.js is missing: npm run build');

  const root = mkdtempSync(path.join(tmpdir(), 'signet-cluster-'));
  // nginx's workers (www-data or nobody when started as root) must reach its temp directories.
  chmodSync(root, 0o755);
  const logDir = path.join(root, 'logs');
  mkdirSync(logDir);
  const cleanups: (() => Promise<void> | void)[] = [() => rmSync(root, { recursive: true, force: true })];
  const nodes: Node[] = [];
  const others: { name: string; logFile: string }[] = [];
  const logs = (lines = 30) =>
    [...nodes, ...others].map((n) => `--- ${n.name} (${n.logFile})\n${tail(n.logFile, lines)}`).join('\n');
  const closeAll = async () => {
    forget();
    await Promise.all(nodes.map((n) => n.stop()));
    for (const c of cleanups.splice(0).reverse()) await c();
  };
  const forget = cleanupOnInterrupt(closeAll);

  try {
    const db = await createDatabase(serverUrl);
    cleanups.push(() => db.drop());
    const pool = new pg.Pool({ connectionString: db.url, max: 4 });
    cleanups.push(() => pool.end());

    const storage = opts.storage ?? storageKinds(['s3'])[0];
    const storageEnv: Record<string, string> = {};
    const sharedDataDir = path.join(root, 'data-shared');
    if (storage === 's3') {
      const dir = path.join(root, 's3');
      mkdirSync(dir);
      const port = await freePort();
      const logFile = path.join(logDir, 's3rver.log');
      const s3 = spawnLogged(process.execPath, [path.join(ROOT, 'node_modules', 's3rver', 'bin', 's3rver.js'), '-d', dir, '-a', '127.0.0.1', '-p', String(port), '-s', '--configure-bucket', 'signet'], process.env, logFile);
      others.push({ name: 's3rver', logFile });
      cleanups.push(async () => {
        s3.child.kill('SIGTERM');
        await s3.exited;
      });
      await waitForPort(port, 30_000, 's3rver', () => s3.child.exitCode !== null);
      Object.assign(storageEnv, {
        STORAGE_DRIVER: 's3',
        S3_ENDPOINT: `http://127.0.0.1:${port}`,
        S3_BUCKET: 'signet',
        S3_REGION: 'us-east-1',
        S3_ACCESS_KEY_ID: 'S3RVER',
        S3_SECRET_ACCESS_KEY: 'S3RVER',
        S3_FORCE_PATH_STYLE: 'true',
      });
    } else if (storage === 'postgres') {
      storageEnv.STORAGE_DRIVER = 'postgres';
    } else {
      mkdirSync(sharedDataDir);
    }

    // One sealing certificate for every node, as an operator would give them (SIGNING_CERT_P12_PATH).
    const passphrase = randomBytes(12).toString('hex');
    const p12 = path.join(root, 'signing-cert.p12');
    writeFileSync(p12, generateDevP12(passphrase), { mode: 0o600 });

    const nginxPort = await freePort();
    const url = `http://127.0.0.1:${nginxPort}`;
    const common: NodeJS.ProcessEnv = {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      DATABASE_URL: db.url,
      DATABASE_POOL_SIZE: '5',
      REDIS_URL: await redisUrl(),
      REDIS_KEY_PREFIX: `signet-cluster-${randomBytes(4).toString('hex')}:`,
      OPS_TOKEN,
      JWT_SECRET: randomBytes(32).toString('hex'),
      SIGNING_LINK_SECRET: randomBytes(32).toString('hex'),
      SIGNING_CERT_P12_PATH: p12,
      SIGNING_CERT_PASSPHRASE: passphrase,
      // A self-signed operator certificate is refused at start unless allowed: this one is a test's.
      SIGNING_CERT_ALLOW_SELF_SIGNED: 'true',
      PUBLIC_URL: url,
      TRUST_PROXY: '127.0.0.1', // nginx, as README's cluster setup names it
      LOG_LEVEL: 'warn',
      RATE_LIMIT_MAX: '1000000',
      WEBHOOK_ALLOW_HOSTS: '127.0.0.1',
      ...storageEnv,
      ...opts.env,
    };

    const servePorts: number[] = [];
    for (let i = 1; i <= opts.serveNodes; i++) {
      const port = await freePort();
      servePorts.push(port);
      const dataDir = storage === 'local' ? sharedDataDir : path.join(root, `data-serve-${i}`);
      const env = { ...common, DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', WORKER_ENABLED: 'false' };
      nodes.push(signetNode(`serve-${i}`, 'serve', env, path.join(logDir, `serve-${i}.log`), port));
    }
    for (let i = 1; i <= opts.workers; i++) {
      const dataDir = storage === 'local' ? sharedDataDir : path.join(root, `data-worker-${i}`);
      nodes.push(signetNode(`worker-${i}`, 'worker', { ...common, DATA_DIR: dataDir }, path.join(logDir, `worker-${i}.log`)));
    }
    // The first node applies the migrations; the rest start side by side.
    await nodes[0].start();
    await Promise.all(nodes.slice(1).map((n) => n.start()));

    const prefix = path.join(root, 'nginx');
    for (const d of ['logs', 'temp']) mkdirSync(path.join(prefix, d), { recursive: true });
    const confFile = path.join(prefix, 'nginx.conf');
    const nginxLog = path.join(prefix, 'logs', 'error.log');
    others.push({ name: 'nginx', logFile: nginxLog });
    let nginx: ReturnType<typeof spawnLogged> | undefined;
    const stopNginx = async () => {
      if (nginx && nginx.child.exitCode === null && nginx.child.signalCode === null) nginx.child.kill('SIGTERM');
      await nginx?.exited;
    };
    const startNginx = async (upstream: number[]) => {
      await stopNginx();
      writeFileSync(confFile, nginxConfig(readFileSync(NGINX_TEMPLATE, 'utf8'), nginxPort, upstream.map((i) => servePorts[i])));
      nginx = spawnLogged(NGINX, ['-p', prefix, '-c', confFile, '-e', nginxLog], process.env, path.join(logDir, 'nginx.out'));
      const me = nginx;
      await waitForPort(nginxPort, 30_000, `nginx (${nginxLog})`, () => me.child.exitCode !== null);
    };
    cleanups.push(stopNginx);
    await startNginx(opts.upstream ?? servePorts.map((_, i) => i));
    const health = await fetch(`${url}/health`);
    if (health.status !== 200) throw new Error(`GET /health through nginx answered ${health.status}: ${await health.text()}`);

    return {
      url,
      serves: nodes.filter((n) => n.role === 'serve'),
      workers: nodes.filter((n) => n.role === 'worker'),
      nodes,
      opsToken: OPS_TOKEN,
      storage,
      pool,
      nginxErrorLog: nginxLog,
      rebalance: startNginx,
      logs,
      close: closeAll,
    };
  } catch (err) {
    const detail = nodes.length ? `\n${logs()}` : '';
    await closeAll().catch(() => {});
    throw new Error(`${(err as Error).message}${detail}`, { cause: err });
  }
}
