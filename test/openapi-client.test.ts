// test-lane: once (the generated client's types against the served document; nothing store-specific)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { SCHEMA_FILE, renderSchemaTypes } from '../client/scripts/generate.js';

// The client's types are generated from the document the app serves: a route or schema change that
// is not regenerated (npm run client:generate) and committed fails here. That they type-check against
// the calls the tests make is `npm run typecheck` (client/tsconfig.json: client/src and client/test).
test('client/src/schema.d.ts is what npm run client:generate makes from the current /openapi.json', async () => {
  const fresh = await renderSchemaTypes();
  const committed = readFileSync(SCHEMA_FILE, 'utf8');
  assert.ok(fresh === committed, 'client/src/schema.d.ts is stale: run `npm run client:generate` and commit it');
  assert.match(committed, /"multipart\/form-data": \{\s+\/\*\*[^]*?payload: \{[^]*?recipients: \{/, 'the create payload part is typed, not a string');
});
