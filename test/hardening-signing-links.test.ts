/**
 * Signing links (DESIGN §4.6): HMAC(SIGNING_LINK_SECRET, a random per-recipient salt), looked up by
 * hash, revocable per recipient; JWT_SECRET alone forges nothing; links issued before migration 0003
 * keep working while the API shows the new one.
 */
import assert from 'node:assert/strict';
import { createHash, createHmac, hkdfSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { sql } from 'drizzle-orm';
import { rowsOf } from '../src/db/client.js';
import { createTestApp, type TestApp } from './harness.js';
import { createEnvelope, getEnvelope, person, recipientToken, session } from './fixtures/envelopes.js';

const LINK_SECRET = 's'.repeat(64);
let t: TestApp;
before(async () => {
  t = await createTestApp({ env: { SIGNING_LINK_SECRET: LINK_SECRET } });
});
after(() => t?.close());

/** The links before this change: HMAC of the sequential recipient id under a key derived from JWT_SECRET. */
const legacyToken = (jwtSecret: string, id: number | string) =>
  createHmac('sha256', Buffer.from(hkdfSync('sha256', jwtSecret, 'signet', 'signing-links v1', 32))).update(`recipient:${id}`).digest('base64url');
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

type EngineRecipient = { id: number; link_salt: string; token_hash: string | null; legacy_token_hash: string | null };
async function engineRecipient(email: string): Promise<EngineRecipient> {
  const [r] = rowsOf<EngineRecipient>(await t.container.db.execute(sql`SELECT id, link_salt, token_hash, legacy_token_hash FROM engine_recipients WHERE email = ${email}`));
  return { ...r, id: Number(r.id) };
}

test('a link is HMAC(SIGNING_LINK_SECRET, the recipient salt): not derivable from JWT_SECRET and the id, salts are 128-bit and distinct', async () => {
  const a = person('a');
  const b = person('b');
  const env = await createEnvelope(t, { title: 'links', recipients: [a, b] });
  const ra = await engineRecipient(a.email);
  const rb = await engineRecipient(b.email);
  const token = recipientToken(env, a.email);

  assert.notEqual(token, legacyToken(t.config.jwtSecret, ra.id), 'JWT_SECRET and the sequential id must not forge a link');
  assert.match(ra.link_salt, /^[0-9a-f]{32}$/);
  assert.notEqual(ra.link_salt, rb.link_salt);
  assert.equal(token, createHmac('sha256', LINK_SECRET).update(`signing-link:${ra.link_salt}`).digest('base64url'));
  assert.equal(ra.token_hash, sha256(token), 'looked up by its hash');
  assert.ok(!JSON.stringify(await engineRecipient(a.email)).includes(token), 'the token itself is not stored');
  assert.equal((await session(t, token)).statusCode, 200);
});

test('a new salt revokes one recipient: the old link stops, the new one opens, the other recipient is untouched', async () => {
  const a = person('a');
  const b = person('b');
  const env = await createEnvelope(t, { title: 'revoke', recipients: [a, b] });
  const oldA = recipientToken(env, a.email);
  const tokenB = recipientToken(env, b.email);
  const { id } = await engineRecipient(a.email);

  const newLink = await t.container.db.transaction((tx) => t.container.local.revokeLink(tx, id));
  assert.equal((await session(t, oldA)).statusCode, 404);
  const newA = new URL(newLink).pathname.split('/').pop()!;
  assert.notEqual(newA, oldA);
  assert.equal((await session(t, newA)).statusCode, 200);
  assert.equal((await session(t, tokenB)).statusCode, 200);
  assert.equal(recipientToken(await getEnvelope(t, env.envelopeId), a.email), newA, 'reads show the new link');
});

test('migration 0003: an existing recipient keeps its old link working and gets a new one, shown by reads', async () => {
  const a = person('legacy');
  const env = await createEnvelope(t, { title: 'legacy', recipients: [a] });
  const { id } = await engineRecipient(a.email);
  // The row as it was before 0003: the hash of the id-derived link, then the migration's own UPDATE.
  const old = legacyToken(t.config.jwtSecret, id);
  await t.container.db.execute(sql`UPDATE engine_recipients SET token_hash = ${sha256(old)} WHERE id = ${id}`);
  const migration = readFileSync(new URL('../src/db/migrations/0003_signing_link_salts.sql', import.meta.url), 'utf8');
  const update = migration.split('--> statement-breakpoint').find((s) => /^\s*UPDATE/m.test(s))!;
  await t.container.db.execute(sql.raw(`${update.replace(/^--.*$/gm, '').trim().replace(/;$/, '')} WHERE id = ${id}`));
  const migrated = await engineRecipient(a.email);
  assert.equal(migrated.legacy_token_hash, sha256(old));
  assert.equal(migrated.token_hash, null);
  assert.match(migrated.link_salt, /^[0-9a-f]{64}$/);

  assert.equal((await session(t, old)).statusCode, 200, 'a link already emailed keeps working');
  const shown = recipientToken(await getEnvelope(t, env.envelopeId), a.email);
  assert.notEqual(shown, old);
  assert.equal((await session(t, shown)).statusCode, 200, 'the link reads now show opens too');
  assert.equal((await engineRecipient(a.email)).token_hash, sha256(shown));

  // Revoking ends both.
  await t.container.db.transaction((tx) => t.container.local.revokeLink(tx, id));
  assert.equal((await session(t, old)).statusCode, 404);
  assert.equal((await session(t, shown)).statusCode, 404);
});
