// test-lane: once (the OpenAPI document's shape; nothing store-specific)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { ERROR_CODES, type ErrorCode } from '../src/errors.js';
import { REQUEST_EXAMPLES } from '../src/http/openapi-examples.js';
import { bearer, createTestApp, type TestApp } from './harness.js';

// What a client generator reads: every operation named, tagged, typed on both sides, with true examples.
type Json = Record<string, any>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => void;

let t: TestApp;
let doc: Json;
let operations: { method: string; path: string; op: Json }[];
before(async () => {
  t = await createTestApp();
  doc = (await t.app.inject({ url: '/openapi.json' })).json();
  operations = Object.entries(doc.paths as Json).flatMap(([path, item]) =>
    METHODS.filter((m) => (item as Json)[m]).map((method) => ({ method, path, op: (item as Json)[method] as Json })),
  );
});
after(() => t.close());

describe('the OpenAPI document, as client generators read it', () => {
  test('validates with swagger-parser (OpenAPI 3.1)', async () => {
    await SwaggerParser.validate(structuredClone(doc) as never);
    assert.ok(operations.length > 30);
  });

  test('every operation has a unique camelCase operationId and exactly one tag', () => {
    const ids = operations.map((o) => o.op.operationId as string);
    for (const { method, path, op } of operations) {
      assert.match(String(op.operationId), /^[a-z][a-zA-Z0-9]*$/, `${method} ${path}`);
      assert.equal(op.tags?.length, 1, `${method} ${path} has one tag`);
      assert.ok(op.summary, `${method} ${path} has a summary`);
    }
    assert.deepEqual(ids.filter((id, i) => ids.indexOf(id) !== i), [], 'duplicate operationIds');
  });

  test('every operation has a 2xx schema, and each error status its codes, each of that status', () => {
    for (const { method, path, op } of operations) {
      const statuses = Object.keys(op.responses);
      const ok = statuses.filter((s) => s.startsWith('2'));
      assert.ok(ok.length > 0, `${method} ${path} documents a 2xx`);
      assert.ok(
        ok.some((s) => s === '204' || op.responses[s].content),
        `${method} ${path}: a 2xx with a body schema`,
      );
      for (const s of ok) for (const media of Object.values((op.responses[s].content ?? {}) as Json)) assert.ok(media.schema, `${method} ${path} ${s} schema`);
      for (const s of statuses.filter((x) => /^[45]/.test(x))) {
        if (path.startsWith('/health') || path === '/.well-known/mcp.json') continue; // discovery answers its own shapes
        const schema = op.responses[s].content?.['application/json']?.schema;
        assert.ok(schema, `${method} ${path} ${s} has an error schema`);
        const codes = schema.properties?.code?.enum as ErrorCode[];
        assert.ok(codes?.length, `${method} ${path} ${s} lists its codes`);
        for (const code of codes) assert.equal(String(ERROR_CODES[code][0]), s, `${method} ${path}: ${code} is a ${s}`);
      }
    }
  });

  test('multipart bodies: file parts are binary, the payload part is JSON with its full schema', () => {
    const multipart = operations.filter((o) => o.op.requestBody?.content?.['multipart/form-data']);
    assert.deepEqual(multipart.map((o) => o.op.operationId).sort(), ['createBulkSend', 'createDraftEnvelope', 'createEnvelope', 'createTemplate', 'setAccountLogo', 'verifyDocument']);
    for (const { op } of multipart) {
      const media = op.requestBody.content['multipart/form-data'];
      for (const [name, part] of Object.entries(media.schema.properties as Json)) {
        if (part.format === 'binary') assert.equal(media.encoding[name].contentType, op.operationId === 'setAccountLogo' ? 'image/png, image/jpeg' : op.operationId === 'createBulkSend' ? 'text/csv' : 'application/pdf', `${op.operationId} ${name}`);
        else {
          assert.equal(part.type, 'object', `${op.operationId} ${name} is described as an object, not a string`);
          assert.equal(media.encoding[name].contentType, 'application/json', `${op.operationId} ${name}`);
        }
      }
    }
    const payload = doc.paths['/v1/envelopes'].post.requestBody.content['multipart/form-data'].schema.properties.payload;
    assert.deepEqual(payload.required, ['recipients']);
    assert.deepEqual(Object.keys(payload.properties.recipients.items.properties).sort(), ['email', 'fields', 'locale', 'name', 'role', 'signingOrder', 'verificationRequired']);
    assert.ok(payload.properties.meta.properties.redirectUrl);
    assert.deepEqual(doc.paths['/v1/documents/verify'].post.requestBody.content['application/pdf'].schema, { type: 'string', format: 'binary', contentMediaType: 'application/pdf' });
    assert.deepEqual(doc.paths['/v1/envelopes/{id}/download'].get.responses['200'].content['application/pdf'].schema, { type: 'string', format: 'binary', contentMediaType: 'application/pdf' });
  });

  test('every request and response has an example, and each validates against its own schema', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addFormat('binary', true);
    for (const [name, schema] of Object.entries(doc.components.schemas as Json)) ajv.addSchema(schema, `#/components/schemas/${name}`);
    let checked = 0;
    for (const { method, path, op } of operations) {
      const medias: [string, Json][] = [
        ...Object.entries((op.requestBody?.content ?? {}) as Json).map(([type, m]) => [`request ${type}`, m] as [string, Json]),
        ...Object.entries(op.responses as Json).flatMap(([status, r]) => Object.entries((r.content ?? {}) as Json).map(([type, m]) => [`${status} ${type}`, m] as [string, Json])),
      ];
      for (const [where, media] of medias) {
        if (media.schema.format === 'binary') continue; // raw bytes: nothing to exemplify in JSON
        assert.ok(media.example !== undefined, `${method} ${path} ${where} has an example`);
        const validate = ajv.compile(media.schema);
        assert.ok(validate(media.example), `${method} ${path} ${where}: ${JSON.stringify(validate.errors)}`);
        checked++;
      }
    }
    assert.ok(checked > 150, `${checked} examples checked`);
    const ids = new Set(operations.map((o) => o.op.operationId));
    assert.deepEqual(Object.keys(REQUEST_EXAMPLES).filter((id) => !ids.has(id)), [], 'hand-written examples name real operations');
  });

  test('each JSON request example passes the server\'s own validation (no VALIDATION_ERROR when sent)', async () => {
    let sent = 0;
    for (const { method, path, op } of operations) {
      const example = op.requestBody?.content?.['application/json']?.example;
      if (example === undefined) continue;
      // A {recipient} is a position or an email address, every other id a UUID.
      const url = path.replace('{recipient}', '1').replace(/\{[^}]+\}/g, '3f2b8c1e-5d4a-4b6f-9e21-7c0d8a9b1e42');
      const res = await t.app.inject({
        method: method.toUpperCase() as 'POST',
        url,
        headers: { ...bearer(t.customer.testApiKey), 'content-type': 'application/json', 'idempotency-key': `example-${op.operationId}` },
        payload: JSON.stringify(example),
      });
      assert.notEqual(res.json().code, 'VALIDATION_ERROR', `${op.operationId}: ${res.body}`);
      sent++;
    }
    assert.ok(sent >= 10, `${sent} examples sent`);
  });
});
