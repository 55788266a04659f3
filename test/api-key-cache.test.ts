import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { buildApp } from '../src/app.js';
import { createContainer } from '../src/container.js';
import { createApiKeyCache } from '../src/modules/account/api-key-cache.js';
import type { Actor } from '../src/context.js';
import { OPS_TOKEN, bearer, createTestApp, testConfig } from './harness.js';

const actor: Actor = { customerId: 'c', mode: 'live', via: 'api_key', keyId: 'k' };

test('the cache expires entries after the TTL and drops the oldest past its size', () => {
  let now = 0;
  const cache = createApiKeyCache({ ttlMs: 1000, maxEntries: 2, now: () => now });
  cache.set('a', actor);
  now = 999;
  assert.equal(cache.get('a'), actor);
  now = 1000;
  assert.equal(cache.get('a'), undefined);
  cache.set('a', actor);
  cache.set('b', actor);
  cache.set('c', actor);
  assert.equal(cache.get('a'), undefined);
  assert.equal(cache.get('c'), actor);
  const off = createApiKeyCache({ ttlMs: 0 });
  off.set('a', actor);
  assert.equal(off.get('a'), undefined);
});

test('a key revoked through one node stops working on another node at once (NOTIFY)', async () => {
  const t = await createTestApp();
  // A second node: its own container, cache and app, on the same database.
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-node2-'));
  const node2 = await createContainer(testConfig(dataDir), { database: t.container.database });
  const app2 = await buildApp(node2);
  try {
    const headers = bearer(t.customer.apiKey);
    assert.equal((await app2.inject({ url: '/v1/account', headers })).statusCode, 200); // now cached on node 2
    const detail = await t.app.inject({ url: `/ops/customers/${t.customer.id}`, headers: bearer(OPS_TOKEN) });
    const live = detail.json().apiKeys.find((k: { mode: string }) => k.mode === 'live');
    const revoked = await t.app.inject({ method: 'DELETE', url: `/ops/customers/${t.customer.id}/api-keys/${live.keyId}`, headers: bearer(OPS_TOKEN) });
    assert.equal(revoked.statusCode, 200);
    assert.equal((await t.app.inject({ url: '/v1/account', headers })).statusCode, 401, 'the revoking node evicts at once');
    const deadline = Date.now() + 2000;
    let status = 200;
    while (Date.now() < deadline && status === 200) {
      status = (await app2.inject({ url: '/v1/account', headers })).statusCode;
      if (status === 200) await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(status, 401, 'node 2 evicted the key on the notification, well before the 30 s TTL');
  } finally {
    await app2.close();
    await t.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
});
