import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig, type Config } from '../src/config.js';
import { createContainer, type Container, type ContainerOverrides } from '../src/container.js';
import { openDatabase, type Database } from '../src/db/client.js';
import { startDocumensoStandin, type DocumensoStandin } from './fixtures/documenso-standin.js';

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

/** A fresh database for one test app: in-memory PGlite, or a new schema when DATABASE_URL is set. */
export async function openTestDatabase(dataDir: string): Promise<Database> {
  const url = process.env.DATABASE_URL;
  if (!url) return openDatabase({ dataDir: 'memory://' });
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
  const documenso = testEngine === 'documenso' && !opts.env?.SIGNING_ENGINE ? await startDocumensoStandin() : undefined;
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
      await app.close();
      await documenso?.close();
      await container.worker.stop();
      await database.close();
      await database.dropSchema?.();
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

export const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
