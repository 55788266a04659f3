/**
 * Secrets every node must share (OPS_TOKEN, JWT_SECRET, SIGNING_LINK_SECRET): a node whose value was
 * generated in its own DATA_DIR is refused at start when another node on the same database uses
 * another one, as `signet serve` and `signet worker` check it after migrating. Real database (one per
 * test, shared by the "nodes"), real configuration with a DATA_DIR per node.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { ConfigError, loadConfig, type Config } from '../src/config.js';
import type { Database } from '../src/db/client.js';
import { createSecretFingerprintsRepo } from '../src/modules/ops/secret-fingerprints.repo.js';
import { checkSharedSecrets } from '../src/modules/ops/shared-secrets.js';
import { openTestDatabase } from './harness.js';

const root = mkdtempSync(path.join(tmpdir(), 'signet-shared-secrets-'));
after(() => rmSync(root, { recursive: true, force: true }));

let dirs = 0;
/** A node's configuration: DATA_DIR of its own, secrets from `env` or generated there. */
const node = (env: Record<string, string> = {}, dataDir = path.join(root, `node-${++dirs}`)) => loadConfig({ DATA_DIR: dataDir, LOG_LEVEL: 'silent', ...env });

/** What `signet serve` and `signet worker` run after migrating (src/main.ts). */
const start = (database: Database, config: Config) =>
  checkSharedSecrets(
    { db: database.db, repo: createSecretFingerprintsRepo() },
    [
      { name: 'OPS_TOKEN', value: config.opsToken },
      { name: 'JWT_SECRET', value: config.jwtSecret },
      { name: 'SIGNING_LINK_SECRET', value: config.signingLinkSecret },
    ],
    config.dataDirSecrets,
  );

async function withDatabase(fn: (database: Database) => Promise<void>): Promise<void> {
  const database = await openTestDatabase(mkdtempSync(path.join(root, 'db-')));
  try {
    await database.migrate();
    await fn(database);
  } finally {
    await database.close();
    await database.dropSchema?.();
  }
}

function assertRefused(err: unknown, names: string[]): true {
  assert.ok(err instanceof ConfigError, `ConfigError, got ${String(err)}`);
  assert.ok(!err.message.includes('\n'), 'one line');
  assert.match(err.message, new RegExp(`^Invalid configuration: ${names.join(', ')}: `));
  assert.match(err.message, new RegExp(`Set ${names.join(', ')} to the same values on every node`));
  return true;
}

test('a second node whose secrets were generated in its own DATA_DIR is refused, naming the variables to set', async () => {
  await withDatabase(async (database) => {
    const first = node();
    await start(database, first);
    // The first node again (a restart on the same DATA_DIR): the same values.
    await start(database, node({}, first.dataDir));

    await assert.rejects(start(database, node()), (err) => assertRefused(err, ['OPS_TOKEN', 'JWT_SECRET', 'SIGNING_LINK_SECRET']));

    // Given the first node's values (its files), the second node starts.
    const copied = (file: string) => readFileSync(path.join(first.dataDir, file), 'utf8').trim();
    await start(database, node({ OPS_TOKEN: copied('ops-token'), JWT_SECRET: copied('jwt-secret'), SIGNING_LINK_SECRET: copied('signing-link-secret') }));
    // Only the one still generated is named.
    await assert.rejects(start(database, node({ OPS_TOKEN: copied('ops-token'), JWT_SECRET: copied('jwt-secret') })), (err) => assertRefused(err, ['SIGNING_LINK_SECRET']));
  });
});

test('values given in the environment always start, and from then on a node with generated values must be given them too', async () => {
  await withDatabase(async (database) => {
    const generated = node();
    await start(database, generated);
    const given = { OPS_TOKEN: 'given-ops-token-0123456789', JWT_SECRET: 'given-jwt-secret-'.padEnd(40, 'x'), SIGNING_LINK_SECRET: 'given-link-secret-'.padEnd(40, 'y') };
    // An operator setting (or rotating) the secrets: the first node with them starts, as do the rest.
    await start(database, node(given));
    await start(database, node(given));
    // The node that kept its generated ones is refused on its next start.
    await assert.rejects(start(database, node({}, generated.dataDir)), (err) => assertRefused(err, ['OPS_TOKEN', 'JWT_SECRET', 'SIGNING_LINK_SECRET']));
    await start(database, node(given, generated.dataDir));
  });
});

test('two fresh nodes starting at the same moment: one records its secrets, the other is refused', async () => {
  await withDatabase(async (database) => {
    const results = await Promise.allSettled([start(database, node()), start(database, node())]);
    assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    assertRefused(refused.reason, ['OPS_TOKEN', 'JWT_SECRET', 'SIGNING_LINK_SECRET']);
  });
});

test('the database keeps a salted fingerprint, never the secret', async () => {
  await withDatabase(async (database) => {
    const config = node({ OPS_TOKEN: 'given-ops-token-0123456789' });
    await start(database, config);
    const rows = await createSecretFingerprintsRepo().all(database.db);
    assert.deepEqual(rows.map((r) => r.name).sort(), ['JWT_SECRET', 'OPS_TOKEN', 'SIGNING_LINK_SECRET']);
    for (const r of rows) {
      assert.match(r.salt, /^[0-9a-f]{32}$/);
      assert.match(r.fingerprint, /^[0-9a-f]{64}$/);
      assert.ok(![config.opsToken, config.jwtSecret, config.signingLinkSecret].some((v) => r.fingerprint.includes(v) || v.includes(r.fingerprint)));
    }
  });
});
