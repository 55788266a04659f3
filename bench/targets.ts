import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { buildApp } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { createContainer } from '../src/container.js';
import { openDatabase } from '../src/db/client.js';

export type DbKind = 'pglite' | 'postgres';

export type Target = { url: string; close(): Promise<void> };
export type SignetTarget = Target & { apiKey: string; origin: string };

export const DB_LABEL: Record<DbKind, string> = { pglite: 'PGlite', postgres: 'PostgreSQL' };

function urlOf(app: FastifyInstance): string {
  const address = app.server.address();
  if (!address || typeof address !== 'object') throw new Error('server is not listening on a TCP port');
  return `http://127.0.0.1:${address.port}`;
}

/** The baseline: what Fastify alone answers on this machine, in this process. */
export async function startBare(): Promise<Target> {
  const app = Fastify();
  app.get('/bare', async () => ({ ok: true }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  return { url: `${urlOf(app)}/bare`, close: () => app.close() };
}

/**
 * Signet as `signet serve` builds it (same container, same app, same plugins), on a file-backed PGlite
 * in a temporary DATA_DIR or in a fresh schema of DATABASE_URL, with one customer to call it as.
 * The worker is off and the rate limit out of reach so only the request path is measured.
 */
export async function startSignet(kind: DbKind, databaseUrl: string | undefined): Promise<SignetTarget> {
  if (kind === 'postgres' && !databaseUrl) throw new Error('the PostgreSQL scenario needs DATABASE_URL');
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-bench-'));
  const config = loadConfig({
    DATA_DIR: dataDir,
    LOG_LEVEL: 'silent',
    WORKER_ENABLED: 'false',
    RATE_LIMIT_MAX: '1000000000',
    ...(kind === 'postgres' ? { DATABASE_URL: databaseUrl } : {}),
  });
  const database =
    kind === 'postgres'
      ? await openDatabase({ databaseUrl, dataDir, poolSize: config.databasePoolSize, schemaName: `bench_${randomBytes(6).toString('hex')}` })
      : await openDatabase({ dataDir });
  const cleanup = async () => {
    await database.dropSchema?.();
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    await database.migrate();
    const container = await createContainer(config, { database });
    const app = await buildApp(container);
    const created = await container.db.transaction((tx) =>
      container.services.ops.createCustomer(tx, { actorType: 'system', requestId: null, ip: null }, {
        email: 'bench@example.com',
        name: 'Bench Customer',
        // Enough for every create-and-send the bench makes.
        creditCents: 100_000_000,
      }),
    );
    await app.listen({ port: 0, host: '127.0.0.1' });
    const url = `${urlOf(app)}/v1/account`;
    // Fail early rather than measure a stream of 401s.
    const probe = await fetch(url, { headers: { authorization: `Bearer ${created.apiKey}` } });
    if (probe.status !== 200) throw new Error(`GET /v1/account answered ${probe.status}: ${await probe.text()}`);
    return {
      url,
      origin: urlOf(app),
      apiKey: created.apiKey,
      async close() {
        await app.close();
        await container.close();
        await cleanup();
      },
    };
  } catch (err) {
    await database.close().catch(() => {});
    await cleanup();
    throw err;
  }
}
