/**
 * Signature images are bounded by their declared dimensions at the door (400 VALIDATION_ERROR,
 * before anything decodes them), and decoded only in the sealing worker, which checks again. They
 * are stored only for a request that passes the checks, and removed when its transaction refuses it.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { deflateSync } from 'node:zlib';
import { imageSizeProblem, MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE, readImageSize } from '../src/pdf/image-header.js';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createLocalStorage } from '../src/providers/storage/index.js';
import { bearer, createTestApp, type TestApp } from './harness.js';
import { assertError, complete, createEnvelope, person, recipientToken, session, sigField } from './fixtures/envelopes.js';
import * as fx from './fixtures/pdfs.js';

/** fx.SMALL_JPEG (40×16) with its SOF0 dimensions rewritten. */
function jpegDeclaring(width: number, height: number): Buffer {
  const b = Buffer.from(fx.SMALL_JPEG);
  const sof = b.indexOf(Buffer.from([0xff, 0xc0]));
  b.writeUInt16BE(height, sof + 5);
  b.writeUInt16BE(width, sof + 7);
  return b;
}

const dataUrl = (mime: string, b: Uint8Array) => `data:${mime};base64,${Buffer.from(b).toString('base64')}`;

describe('signature image headers', () => {
  test('PNG IHDR and JPEG SOFn sizes are read without decoding', () => {
    assert.deepEqual(readImageSize(fx.signaturePng()), { format: 'png', width: 300, height: 100 });
    assert.deepEqual(readImageSize(fx.SMALL_JPEG), { format: 'jpeg', width: 40, height: 16 });
    assert.deepEqual(readImageSize(fx.pngDeclaring(16000, 16000)), { format: 'png', width: 16000, height: 16000 });
    assert.deepEqual(readImageSize(jpegDeclaring(9000, 20)), { format: 'jpeg', width: 9000, height: 20 });
    assert.equal(readImageSize(Buffer.from('GIF89a..................')), null);
    assert.equal(readImageSize(fx.SMALL_JPEG.subarray(0, 100)), null, 'no frame header before the data ends');
  });

  test('bounds: a side and the pixel count', () => {
    assert.equal(imageSizeProblem({ format: 'png', width: MAX_IMAGE_SIDE, height: MAX_IMAGE_PIXELS / MAX_IMAGE_SIDE }), null);
    assert.match(imageSizeProblem({ format: 'png', width: MAX_IMAGE_SIDE + 1, height: 10 })!, /a side/);
    assert.match(imageSizeProblem({ format: 'png', width: 3000, height: 3000 })!, /in all/);
    assert.match(imageSizeProblem({ format: 'jpeg', width: 0, height: 10 })!, /no pixels/);
  });
});

describe('POST /sign/{token}/complete: oversized images are refused at the door', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('10000×10000 and 16000×16000 PNGs, a 5000-pixel side, 9 Mpx, a huge JPEG, a second IHDR: 400 VALIDATION_ERROR; nothing stored', async () => {
    const a = person('img');
    const env = await createEnvelope(t, { title: 'Images', recipients: [a] });
    const token = recipientToken(env, a.email);
    const fields = (await session(t, token)).json().fields as { fieldId: number }[];
    assert.equal(fields.length, 1);
    const cases: [string, Uint8Array, RegExp][] = [
      ['image/png', fx.pngDeclaring(10_000, 10_000), /10000×10000 pixels/],
      ['image/png', fx.pngDeclaring(16_000, 16_000), /16000×16000 pixels/],
      ['image/png', fx.pngDeclaring(5000, 10), /a side/],
      ['image/png', fx.pngDeclaring(3000, 3000), /in all/],
      ['image/jpeg', jpegDeclaring(65_000, 65_000), /65000×65000 pixels/],
      ['image/png', fx.pngDeclaring(0, 10), /no pixels/],
      ['image/jpeg', fx.SMALL_JPEG.subarray(0, 100), /size cannot be read/],
      // 10×10 to a check that reads the first IHDR, 6000×6000 to a decoder that keeps the last.
      ['image/png', fx.pngWithHeaders([[10, 10], [6000, 6000]], deflateSync(Buffer.alloc(41))), /more than one header \(IHDR/],
      ['image/png', fx.pngWithHeaders([[10, 10], [10, 10]], deflateSync(Buffer.alloc(41 * 10))), /more than one header \(IHDR/],
    ];
    for (const [mime, bytes, reason] of cases) {
      for (const kind of ['drawn', 'uploaded']) {
        const body = assertError(await complete(t, token, { fields: [], signature: { kind, image: dataUrl(mime, bytes) } }), 400, 'VALIDATION_ERROR');
        assert.equal(body.details[0].path, 'body.signature.image');
        assert.match(body.error, reason);
      }
    }
    // A real signature of ordinary size still goes through.
    const ok = await complete(t, token, { fields: [], signature: { kind: 'drawn', image: dataUrl('image/png', fx.signaturePng()) } });
    assert.equal(ok.statusCode, 200, ok.body);
  });
});

describe('POST /sign/{token}/complete: the image is stored before the transaction', () => {
  let t: TestApp;
  let release: () => void = () => {};
  let stalled: () => void = () => {};
  const reachedPut = new Promise<void>((r) => (stalled = r));
  before(async () => {
    // A store whose signature writes wait for the test: the slow disk of DESIGN §4.13.
    const blobs = createLocalStorage(path.join(mkdtempSync(path.join(tmpdir(), 'signet-slow-blobs-')), 'blobs'));
    const gate = new Promise<void>((r) => (release = r));
    const storage = {
      ...blobs,
      async put(key: string, bytes: Uint8Array) {
        if (key.includes('/signatures/')) {
          stalled();
          await gate;
        }
        await blobs.put(key, bytes);
      },
    };
    t = await createTestApp({ overrides: { storage } });
  });
  after(() => t.close());

  test('a slow image write holds no lock: the envelope answers meanwhile, and the signature then completes', async () => {
    const a = person('slowdisk');
    const env = await createEnvelope(t, { title: 'Slow disk', recipients: [a] });
    const token = recipientToken(env, a.email);
    const signing = complete(t, token, { fields: [], signature: { kind: 'drawn', image: dataUrl('image/png', fx.signaturePng()) } });
    await reachedPut;
    // GET /status locks the envelope row in a transaction, as every state change does.
    const status = await Promise.race([
      t.app.inject({ url: `/v1/envelopes/${env.envelopeId}/status`, headers: bearer(t.customer.apiKey) }),
      new Promise<'blocked'>((r) => setTimeout(() => r('blocked'), 3_000)),
    ]);
    release();
    assert.notEqual(status, 'blocked', 'the envelope stayed locked while the image was written');
    assert.equal((await signing).statusCode, 200);
  });
});

/** The signature images this app's storage holds, referenced or not (each describe has its own app). */
async function signatureBlobs(t: TestApp): Promise<string[]> {
  const keys: string[] = [];
  for await (const b of t.container.storage.list!('documents/')) if (b.key.includes('/signatures/')) keys.push(b.key);
  return keys;
}

describe('POST /sign/{token}/complete: a refused request leaves no image behind', () => {
  let t: TestApp;
  before(async () => {
    t = await createTestApp();
  });
  after(() => t.close());

  test('twenty completions refused for what they carry store nothing; the one that signs stores one image', async () => {
    // A second signer keeps the envelope open once the first signed.
    const [a, b] = [person('refused'), person('refused-b')];
    const env = await createEnvelope(t, { title: 'Refusals', recipients: [a, b], fields: [sigField(a.email), sigField(a.email, { type: 'TEXT', positionYPercent: 20 }), sigField(b.email, { positionYPercent: 40 })] });
    const token = recipientToken(env, a.email);
    const fields = (await session(t, token)).json().fields as { fieldId: number; type: string }[];
    const text = fields.find((f) => f.type === 'TEXT')!.fieldId;
    const signature = { kind: 'drawn', image: dataUrl('image/png', fx.signaturePng()) };
    for (let i = 0; i < 10; i++) {
      // A field that is not theirs, then a required TEXT left empty.
      assertError(await complete(t, token, { fields: [{ fieldId: 999_999_999, value: 'x' }], signature }), 400, 'VALIDATION_ERROR');
      assertError(await complete(t, token, { fields: [], signature }), 400, 'VALIDATION_ERROR');
    }
    assert.deepEqual(await signatureBlobs(t), []);
    assert.equal((await complete(t, token, { fields: [{ fieldId: text, value: 'Done' }], signature })).statusCode, 200);
    assert.equal((await signatureBlobs(t)).length, 1);
    // Signed: a further completion is refused before anything is stored.
    assertError(await complete(t, token, { fields: [{ fieldId: text, value: 'Again' }], signature }), 409, 'ALREADY_ACTED');
    assert.equal((await signatureBlobs(t)).length, 1);
  });
});

describe('POST /sign/{token}/complete: an image whose transaction refuses the request is removed', () => {
  let t: TestApp;
  let release: () => void = () => {};
  let stalled: () => void = () => {};
  const reachedPut = new Promise<void>((r) => (stalled = r));
  before(async () => {
    // The first signature image write waits for the test, so another request can act meanwhile.
    const blobs = createLocalStorage(path.join(mkdtempSync(path.join(tmpdir(), 'signet-held-blobs-')), 'blobs'));
    const gate = new Promise<void>((r) => (release = r));
    let held = false;
    const storage = {
      ...blobs,
      async put(key: string, bytes: Uint8Array) {
        if (key.includes('/signatures/') && !held) {
          held = true;
          stalled();
          await gate;
        }
        await blobs.put(key, bytes);
      },
    };
    t = await createTestApp({ overrides: { storage } });
  });
  after(() => t.close());

  test('a drawn signature overtaken by a typed one: 409 ALREADY_ACTED, and its image is gone', async () => {
    const [a, b] = [person('overtaken'), person('overtaken-b')];
    const env = await createEnvelope(t, { title: 'Overtaken', recipients: [a, b] });
    const token = recipientToken(env, a.email);
    const drawn = complete(t, token, { fields: [], signature: { kind: 'drawn', image: dataUrl('image/png', fx.signaturePng()) } });
    await reachedPut;
    assert.equal((await complete(t, token, { fields: [], signature: { kind: 'typed', text: 'Person overtaken' } })).statusCode, 200);
    release();
    assertError(await drawn, 409, 'ALREADY_ACTED');
    assert.deepEqual(await signatureBlobs(t), []);
  });
});
