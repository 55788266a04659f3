/** A wallet JWT caller's account: billable calls paid from the balance, own envelopes, summary and product enrollment. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { decodeJwt } from 'jose';
import { createTestApp, type TestApp } from './harness.js';
import { assertError, createEnvelope, envelopeBody, newKey, postMultipart, samplePdf, sigField, signer } from './fixtures/envelopes.js';
import { newWallet, signIn } from './fixtures/wallet.js';

let t: TestApp;
let token: string;
let customerId: string;
let walletAddress: string;
before(async () => {
  t = await createTestApp();
  const session = await signIn(t, newWallet());
  token = session.token;
  walletAddress = session.walletAddress;
  customerId = String(decodeJwt(token).customerId);
});
after(async () => {
  await t?.close();
});

const get = (url: string, auth: string | null) => t.app.inject({ url, headers: auth === null ? {} : { authorization: auth } });
const post = (url: string, auth: string | null, headers: Record<string, string> = {}) =>
  t.app.inject({ method: 'POST', url, headers: { ...(auth === null ? {} : { authorization: auth }), ...headers } });
const credit = (amountCents: number) =>
  t.container.db.transaction((tx) => t.container.services.ops.addCredits(tx, { actorType: 'system', requestId: null, ip: null }, customerId, { amountCents, reason: 'test top-up' }));

describe('billable calls and envelopes with a wallet JWT', () => {
  test('with no balance a billable call is 402 INSUFFICIENT_BALANCE; once credited the balance pays', async () => {
    const body = envelopeBody([await samplePdf()], { title: 'Wallet envelope', recipients: [signer(1)], fields: [sigField(signer(1).email)] });
    assertError(await postMultipart(t, body, { apiKey: token, key: newKey() }), 402, 'INSUFFICIENT_BALANCE');

    await credit(100);
    const created = await createEnvelope(t, { title: 'Wallet envelope', recipients: [signer(1)] }, { apiKey: token, key: newKey() });
    const account = (await get('/v1/account', `Bearer ${token}`)).json();
    assert.equal(account.creditsCents, 90);
    assert.equal(account.totalSpentCents, 10);
    assert.equal(account.totalSpentFormatted, '$0.10');
    assert.equal(account.walletAddress, walletAddress);

    // Its own envelopes, and no one else's.
    const mine = (await get('/v1/envelopes', `Bearer ${token}`)).json();
    assert.deepEqual(mine.data.map((e: { envelopeId: string }) => e.envelopeId), [created.envelopeId]);
    assert.equal((await get(`/v1/envelopes/${created.envelopeId}`, `Bearer ${token}`)).statusCode, 200);
    assertError(await get(`/v1/envelopes/${created.envelopeId}`, `Bearer ${t.customer.apiKey}`), 404, 'ENVELOPE_NOT_FOUND');
    const apiKeyAccount = (await get('/v1/account', `Bearer ${t.customer.apiKey}`)).json();
    assert.equal(apiKeyAccount.walletAddress, null);
    assert.equal(apiKeyAccount.totalSpentCents, null);
  });

  test('GET /v1/account/summary: counts, spending by day and month, pending envelopes', async () => {
    const draft = await postMultipart(t, envelopeBody([await samplePdf()], { title: 'Draft', recipients: [signer(2)], fields: [sigField(signer(2).email)] }), { apiKey: token, url: '/v1/envelopes/draft' });
    assert.equal(draft.statusCode, 201, draft.body);
    const res = await get('/v1/account/summary', `Bearer ${token}`);
    assert.equal(res.statusCode, 200, res.body);
    const s = res.json();
    assert.equal(s.walletAddress, walletAddress);
    assert.equal(s.summary.totalEnvelopes, 2);
    assert.equal(s.summary.totalSpentCents, 10);
    assert.equal(s.summary.totalSpentFormatted, '$0.10');
    assert.equal(s.summary.byStatus.DRAFT, 1);
    assert.equal(Object.values(s.summary.byStatus as Record<string, number>).reduce((a, b) => a + b, 0), 2);
    const today = new Date().toISOString().slice(0, 10);
    assert.deepEqual(s.spending.byDay, [{ date: today, cents: 10 }]);
    assert.deepEqual(s.spending.byMonth, [{ month: today.slice(0, 7), cents: 10 }]);
    assert.equal(s.pendingEnvelopes.length, 2);
    assert.equal(s.pendingEnvelopes[0].envelopeId, draft.json().envelopeId, 'most recently active first');
  });

  test('the summary is for wallet JWTs only: an API key is 403 WALLET_JWT_REQUIRED', async () => {
    assertError(await get('/v1/account/summary', `Bearer ${t.customer.apiKey}`), 403, 'WALLET_JWT_REQUIRED');
    assertError(await get('/v1/account/summary', null), 401, 'UNAUTHORIZED');
  });
});

describe('product enrollment', () => {
  test('a wallet JWT enables service_id; repeating it answers the same body', async () => {
    assert.deepEqual((await get('/v1/account/products', `Bearer ${token}`)).json(), { data: [] });
    const first = await post('/v1/account/products/service_id/enable', `Bearer ${token}`);
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().product, 'service_id');
    assert.equal(first.json().enabled, true);
    const again = await post('/v1/account/products/service_id/enable', `Bearer ${token}`);
    assert.equal(again.statusCode, 200);
    assert.equal(again.body, first.body);
    const list = (await get('/v1/account/products', `Bearer ${token}`)).json();
    assert.deepEqual(list, { data: [first.json()] });
  });

  test('another product is 404 PRODUCT_NOT_FOUND', async () => {
    assertError(await post('/v1/account/products/other_product/enable', `Bearer ${token}`), 404, 'PRODUCT_NOT_FOUND');
  });

  test('an API key cannot enable (403 FORBIDDEN) but can list; no credential is 401', async () => {
    const res = assertError(await post('/v1/account/products/service_id/enable', `Bearer ${t.customer.apiKey}`), 403, 'FORBIDDEN');
    assert.match(res.error, /wallet/i);
    const list = await get('/v1/account/products', `Bearer ${t.customer.apiKey}`);
    assert.equal(list.statusCode, 200);
    assert.deepEqual(list.json(), { data: [] });
    assertError(await get('/v1/account/products', null), 401, 'MISSING_AUTH');
    assertError(await post('/v1/account/products/service_id/enable', null), 401, 'UNAUTHORIZED');
  });

  test('an x402 caller is 400 X402_NOT_APPLICABLE on both', async () => {
    const actor = { customerId, mode: 'live', via: 'x402', keyId: null, walletAddress } as const;
    await assert.rejects(t.container.services.products.list(t.container.db, actor), { code: 'X402_NOT_APPLICABLE' });
    await assert.rejects(
      t.container.db.transaction((tx) => t.container.services.products.enable(tx, { actor, requestId: 'r', ip: '127.0.0.1', testModeHeader: false }, 'service_id')),
      { code: 'X402_NOT_APPLICABLE' },
    );
  });
});
