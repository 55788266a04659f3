import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { createContainer, type Container, type ContainerOverrides } from '../src/container.js';
import { dumpPgliteImage, openDatabase, type Database, type DatabaseOptions } from '../src/db/client.js';
import type { DocumensoStandin } from './fixtures/documenso-standin.js';

export const OPS_TOKEN = 'test-ops-token-0123456789abcdef';
export const S2S_KEY = 's2s-key-0123456789abcdef';

export type TestCustomer = { id: string; apiKey: string; testApiKey: string };

export type TestApp = {
  app: FastifyInstance;
  container: Container;
  config: Config;
  customer: TestCustomer;
  /** Creates another customer through the operator service, as POST /ops/customers does. */
  createCustomer(creditCents?: number): Promise<TestCustomer>;
  /** TEST_SIGNING_ENGINE=documenso: the Documenso stand-in this app fronts (recipients sign there). */
  documenso?: DocumensoStandin;
  close(): Promise<void>;
};

export type TestAppOptions = {
  env?: Record<string, string>;
  creditCents?: number;
  overrides?: ContainerOverrides;
  /** Register extra routes before the app is ready (e.g. a fixture that exercises a plugin). */
  beforeReady?: (app: FastifyInstance, container: Container) => void | Promise<void>;
};

const ROOT = path.resolve(import.meta.dirname, '..');
/** Bump when dumpPgliteImage makes a different image from the same migrations. */
const IMAGE_FORMAT = '2: 1 MiB WAL segments, no template databases';
let pgliteImage: Promise<Blob> | undefined;
let pgliteRuntime: Promise<NonNullable<DatabaseOptions['pglite']>> | undefined;

/**
 * A migrated PGlite data directory, made once per set of migrations and PGlite version and kept in the
 * temp directory: a database started from it costs about 0.4 s, against about 3 s for initdb and the
 * migrations. Written under a temporary name, then renamed, so parallel test files never read half of one.
 */
export function testPgliteImage(): Promise<Blob> {
  pgliteImage ??= (async () => {
    const hash = createHash('sha256');
    hash.update(IMAGE_FORMAT).update(JSON.parse(readFileSync(path.join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version);
    const migrations = path.join(ROOT, 'src/db/migrations');
    for (const f of readdirSync(migrations, { recursive: true, encoding: 'utf8' }).sort()) {
      const file = path.join(migrations, f);
      if (statSync(file).isFile()) hash.update(f).update(readFileSync(file));
    }
    const file = path.join(tmpdir(), `signet-pglite-image-${hash.digest('hex').slice(0, 16)}.tar`);
    if (existsSync(file)) return new Blob([readFileSync(file)]);
    const image = await dumpPgliteImage();
    const partial = `${file}.${process.pid}.${randomBytes(4).toString('hex')}`;
    writeFileSync(partial, Buffer.from(await image.arrayBuffer()));
    renameSync(partial, file);
    return image;
  })();
  return pgliteImage;
}

/** Makes DATA_DIR's PGlite database from the image, for a server process the test starts on it. */
export async function seedPgliteDataDir(dataDir: string): Promise<void> {
  const database = await openDatabase({ dataDir, pgliteImage: await testPgliteImage() });
  await database.close();
}

/**
 * What every in-memory test database shares within a process: PGlite's WASM compiled once (each
 * PGlite.create compiles its 9 MB again otherwise) and its file bundle read once; and 8 MB of shared
 * buffers (the server's default is 16), which postgres zeroes at every start and a test's few rows never fill.
 * Together with the smaller image, a test database starts in about 0.75 s of CPU instead of 2.2 s.
 */
function testPgliteRuntime(): Promise<NonNullable<DatabaseOptions['pglite']>> {
  pgliteRuntime ??= (async () => {
    const dist = path.join(ROOT, 'node_modules/@electric-sql/pglite/dist');
    return {
      pgliteWasmModule: await WebAssembly.compile(readFileSync(path.join(dist, 'pglite.wasm'))),
      fsBundle: new Blob([readFileSync(path.join(dist, 'pglite.data'))]),
    };
  })();
  return pgliteRuntime;
}

/** A fresh database for one test app: in-memory PGlite, or a new schema when DATABASE_URL is set. */
export async function openTestDatabase(dataDir: string): Promise<Database> {
  const url = process.env.DATABASE_URL;
  if (!url) return openDatabase({ dataDir: 'memory://', pgliteImage: await testPgliteImage(), pglite: await testPgliteRuntime(), pgliteSharedBuffersMb: 8 });
  return openDatabase({ databaseUrl: url, dataDir, poolSize: 20, schemaName: `t_${randomBytes(6).toString('hex')}` });
}

export function testConfig(dataDir: string, env: Record<string, string> = {}): Config {
  return loadConfig({
    DATA_DIR: dataDir,
    OPS_TOKEN,
    S2S_KEY,
    JWT_SECRET: 'j'.repeat(64),
    LOG_LEVEL: 'silent',
    WORKER_ENABLED: 'false',
    PUBLIC_URL: 'http://signet.test',
    ...env,
  });
}

/**
 * TEST_SIGNING_ENGINE=documenso runs a suite's apps over the documenso engine, each in front of its own
 * stand-in (test/fixtures/documenso-standin.ts) whose webhooks reach the app over HTTP. An app whose
 * test chose its engine itself (env SIGNING_ENGINE) is left as asked.
 */
export const testEngine = process.env.TEST_SIGNING_ENGINE === 'documenso' ? 'documenso' : 'local';
const DOCUMENSO_SECRET = 'documenso-webhook-secret-for-tests';

export async function createTestApp(opts: TestAppOptions = {}): Promise<TestApp> {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-test-'));
  // Imported only when used: Documenso's SDK costs every test process about 0.7 s of CPU otherwise.
  const documenso = testEngine === 'documenso' && !opts.env?.SIGNING_ENGINE ? await (await import('./fixtures/documenso-standin.js')).startDocumensoStandin() : undefined;
  const engineEnv: Record<string, string> = documenso ? { SIGNING_ENGINE: 'documenso', DOCUMENSO_URL: documenso.url, DOCUMENSO_API_KEY: documenso.apiKey, DOCUMENSO_WEBHOOK_SECRET: DOCUMENSO_SECRET } : {};
  const config = testConfig(dataDir, { ...engineEnv, ...opts.env });
  const database = opts.overrides?.database ?? (await openTestDatabase(dataDir));
  await database.migrate();
  const container = await createContainer(config, { ...opts.overrides, database });
  const app = await buildApp(container);
  await opts.beforeReady?.(app, container);
  await app.ready();
  if (documenso) {
    // Documenso posts its webhooks over HTTP: the app listens, as in production.
    await app.listen({ port: 0, host: '127.0.0.1' });
    documenso.webhook = { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/engine/documenso/webhook`, secret: DOCUMENSO_SECRET };
  }

  const createCustomer = async (creditCents = 0): Promise<TestCustomer> => {
    const created = await container.db.transaction((tx) =>
      container.services.ops.createCustomer(tx, { actorType: 'system', requestId: null, ip: null }, {
        email: `c${randomBytes(4).toString('hex')}@example.com`,
        name: 'Test Customer',
        creditCents,
      }),
    );
    return { id: created.customerId, apiKey: created.apiKey, testApiKey: created.testApiKey };
  };
  const customer = await createCustomer(opts.creditCents ?? 500);

  return {
    app,
    container,
    config,
    customer,
    createCustomer,
    documenso,
    async close() {
      // The test is done with its connections. Node's close waits for any it counts as busy: one, a
      // keep-alive fetch connection whose every answer had been sent, held mcp.test.ts's close for 70 s
      // (the server's headers timeout) when documenso-engine.test.ts ran beside it.
      const closed = app.close();
      app.server.closeAllConnections();
      await closed;
      await documenso?.close();
      await container.worker.stop();
      await database.close();
      await database.dropSchema?.();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
