import { buildApp } from './app.js';
import { loadConfig, type Config } from './config.js';
import { createContainer, type Container } from './container.js';
import { collectGarbage } from './lib/gc.js';
import { createSecretFingerprintsRepo } from './modules/ops/secret-fingerprints.repo.js';
import { checkSharedSecrets } from './modules/ops/shared-secrets.js';
import { warmPdfWorkers } from './pdf/prepare.js';

type Stoppable = { stop(): Promise<void> };

/**
 * Stops cleanly on SIGTERM/SIGINT: `stop` (which drains in-flight requests and jobs in hand), then the
 * pool closes. A stop that takes longer than `graceMs` (default 30 s) exits 1.
 */
function onShutdown(container: Container, stop: (signal: NodeJS.Signals) => Promise<void>, graceMs = 30_000): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    container.logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => process.exit(1), graceMs);
    force.unref();
    stop(signal)
      .then(() => container.close())
      .then(() => process.exit(0))
      .catch((err) => {
        container.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      });
  };
  process.once('SIGTERM', handler);
  process.once('SIGINT', handler);
}

function announceSecrets(config: Config): void {
  for (const s of config.generatedSecrets) {
    if (s.name === 'OPS_TOKEN') {
      console.log(`Operator token (OPS_TOKEN) generated: ${config.opsToken}`);
      console.log(`  stored in ${s.file} (mode 0600); set OPS_TOKEN to choose your own`);
    } else console.log(`${s.name} generated and stored in ${s.file} (mode 0600)`);
  }
  if (!config.generatedSecrets.some((s) => s.name === 'OPS_TOKEN') && !process.env.OPS_TOKEN) {
    console.log(`Operator token: stored in ${config.dataDir}/ops-token`);
  }
}

/** Migrates, then refuses a node whose generated secrets differ from those of the other nodes on this database. */
async function migrateAndCheck(container: Container): Promise<void> {
  const { config } = container;
  try {
    await container.database.migrate();
    const secrets = [
      { name: 'OPS_TOKEN', value: config.opsToken },
      { name: 'JWT_SECRET', value: config.jwtSecret },
      { name: 'SIGNING_LINK_SECRET', value: config.signingLinkSecret },
    ];
    await checkSharedSecrets({ db: container.db, repo: createSecretFingerprintsRepo() }, secrets, config.dataDirSecrets);
  } catch (err) {
    await container.close();
    throw err;
  }
}

/**
 * Refuses a process whose sealing certificate PDF readers would reject (ConfigError, one line), and
 * says once what an operator should know about the one it keeps (the development seal, an expiry near).
 */
async function checkSealCertificate(container: Container): Promise<void> {
  const { config } = container;
  // Documenso seals with its own certificate: ours is checked only when the operator named one.
  if (config.signingEngine === 'documenso' && !config.signingCertP12Path) return;
  try {
    const seal = await container.sealCertificate.check();
    const fix = seal.certificate === 'development' ? ': set SIGNING_CERT_P12_PATH to a CA-issued certificate (docs/operating.md: The sealing certificate)' : '';
    for (const warning of seal.warnings) container.logger.warn({ subject: seal.subject, notAfter: seal.notAfter }, `sealing certificate: ${warning}${fix}`);
  } catch (err) {
    await container.close();
    throw err;
  }
}

/**
 * Starting leaves the heap at its fullest: what loading, migrating and building the routes allocated
 * and dropped, and a young generation grown to its bound. V8 gives that back by itself only once its
 * memory reducer sees the process idle (8 s at the earliest) and not all of it; one collection for
 * memory pressure before the first request (two rounds of some 120 ms each on a loaded 2-core machine,
 * once) leaves an idle server some 15 MiB smaller from the start (docs/operating.md: Memory).
 */
function settleStartMemory(): void {
  collectGarbage('shrink');
}

/** `signet serve`: HTTP API, plus the job worker in-process unless WORKER_ENABLED=false. */
export async function serve(config: Config = loadConfig()): Promise<Stoppable> {
  const container = await createContainer(config);
  await checkSealCertificate(container);
  await migrateAndCheck(container);
  const app = await buildApp(container);
  settleStartMemory();
  await app.listen({ port: config.port, host: config.host });
  // By default no PDF parsing worker is loaded here: the first upload starts one, which ends after 30 s
  // without uploads. Kept warm one holds some 29 MiB for ever; its start costs the first upload of a
  // spell the better part of a second and as much memory (docs/operating.md: Memory).
  if (config.pdfParseWarmWorkers > 0) warmPdfWorkers({ maxMemoryMb: config.pdfParseMaxMemoryMb }, config.pdfParseWarmWorkers);
  if (config.workerEnabled) await container.worker.start();
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  console.log(`${banner(container)} listening on http://${config.host}:${port} (public URL ${config.publicUrl})`);
  console.log(`Database: ${container.database.location}`);
  // Where a newcomer goes next, on the address their browser reaches.
  const base = config.publicUrl.replace(/\/$/, '');
  console.log(`Dashboard: ${config.dashboardUrl}\nAPI reference: ${base}/docs (guides: ${base}/docs/guides)\nVerify a document: ${base}/verify-document`);
  announceSecrets(config);
  warnAllowHosts(container);
  const stop = async () => {
    await app.close();
    await container.worker.stop();
  };
  // SIGTERM (an orchestrator, a deploy): drain first. /health/ready turns 503 at once so load balancers
  // stop sending, every request is still served for SHUTDOWN_DRAIN_MS while they notice, then the server
  // closes (waiting for requests in flight). The worker stops claiming at once and finishes its jobs.
  // SIGINT (Ctrl-C at a terminal) skips the wait.
  const drainThenStop = async (signal: NodeJS.Signals) => {
    if (signal !== 'SIGTERM') return stop();
    app.startDraining();
    const workerStopped = container.worker.stop();
    container.logger.info({ drainMs: config.shutdownDrainMs }, 'draining: /health/ready answers 503; closing after the drain period');
    await new Promise((resolve) => setTimeout(resolve, config.shutdownDrainMs));
    await app.close();
    await workerStopped;
  };
  onShutdown(container, drainThenStop, config.shutdownDrainMs + 30_000);
  return { stop: async () => { await stop(); await container.close(); } };
}

/** Names the runtime too: operators and the tests check which Node.js a process runs on (README: Runtime). */
const banner = (container: Container) => `Signet ${container.version} (Node.js ${process.version})`;

/** The deny-list exemption is for development and tests; say so loudly when it is on. */
function warnAllowHosts(container: Container): void {
  const hosts = container.config.webhookAllowHosts;
  if (hosts.length) container.logger.warn({ hosts }, 'WEBHOOK_ALLOW_HOSTS exempts these hosts from the webhook address checks: for local development and tests only');
}

/** `signet worker`: the job worker alone, for scaling workers apart from API nodes. */
export async function work(config: Config = loadConfig()): Promise<Stoppable> {
  const container = await createContainer(config);
  await checkSealCertificate(container);
  await migrateAndCheck(container);
  settleStartMemory();
  await container.worker.start();
  warnAllowHosts(container);
  console.log(`${banner(container)} worker ${container.worker.workerId} started`);
  onShutdown(container, () => container.worker.stop());
  return { stop: () => container.close() };
}

export async function migrate(config: Config = loadConfig()): Promise<void> {
  const container = await createContainer(config);
  try {
    await container.database.migrate();
    console.log('Migrations applied');
  } finally {
    await container.database.close();
  }
}
