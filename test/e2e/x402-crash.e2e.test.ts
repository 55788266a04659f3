/**
 * A paid x402 call whose process is SIGKILLed between the settle and the commit, on a real local chain:
 * the money moved and the call never committed. The settlement was written down before the settle, so
 * the next process to open the database finds it, and its sweep ends it refunded, with an operator alert.
 * (crash-server.ts children on a PGlite directory, or a PostgreSQL schema, of this file's own.)
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, test } from 'node:test';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { eq } from 'drizzle-orm';
import type { PrivateKeyAccount } from 'viem/accounts';
import { loadConfig } from '../../src/config.js';
import { createContainer } from '../../src/container.js';
import { openDatabase } from '../../src/db/client.js';
import { operatorAlerts, x402Refunds, x402Settlements } from '../../src/db/schema/index.js';
import { FIXTURE_PATH } from '../fixtures/billable-route.js';
import { crashChildren, type Child } from '../fixtures/crash-children.js';
import { startChain, type Chain } from './x402-chain.js';
import { x402Env, x402Payers } from './x402-payer.js';

const PRICE = 100_000n; // the fixture route: USD 0.10

let chain: Chain;
let payers: ReturnType<typeof x402Payers>;
let children: Awaited<ReturnType<typeof crashChildren>>;

before(async () => {
  chain = await startChain();
  payers = x402Payers(chain);
  children = await crashChildren('x402-crash');
});
after(async () => {
  await children?.close();
  await chain?.close();
});

/** A child paid on the chain; its settles wait up to a minute for the facilitator. */
const startChild = (env: Record<string, string> = {}) => children.start(x402Env(chain, { X402_SETTLE_TIMEOUT_MS: '60000', ...env }));

/** Starts the paid call (the fixture route) in `child`: `answered` is its status, or 'no answer'. */
async function payCall(child: Child, payer: PrivateKeyAccount, title: string): Promise<{ answered: Promise<number | 'no answer'> }> {
  const send = (headers: Record<string, string>) =>
    fetch(`${child.base}${FIXTURE_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', 'idempotency-key': `crash-${title}`, ...headers }, body: JSON.stringify({ title }) });
  const offer = await send({});
  assert.equal(offer.status, 402, await offer.text());
  const header = await payers.sign(payer, decodePaymentRequiredHeader(offer.headers.get('payment-required')!));
  const answered = send({ 'payment-signature': header }).then(
    (r) => r.status,
    () => 'no answer' as const,
  );
  return { answered };
}

async function kill(child: Child): Promise<void> {
  child.proc.kill('SIGKILL');
  assert.equal((await child.exited).signal, 'SIGKILL');
}

/** The next process on the same data: the app as the children configure it, its worker off; the test runs its sweeps. */
async function nextProcess() {
  const config = loadConfig({ ...children.env, ...x402Env(chain) });
  const database = await openDatabase({ databaseUrl: process.env.DATABASE_URL, dataDir: config.dataDir, schemaName: children.env.CRASH_SCHEMA, poolSize: 2 });
  const container = await createContainer(config, { database });
  return { container, close: () => container.close() };
}

async function refundedWithAlert(db: Awaited<ReturnType<typeof nextProcess>>['container']['db'], payer: PrivateKeyAccount) {
  const [settlement] = await db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
  assert.equal(settlement.status, 'orphaned');
  assert.match(settlement.txHash ?? '', /^0x[0-9a-f]{64}$/);
  const [refund] = await db.select().from(x402Refunds).where(eq(x402Refunds.settlementId, settlement.id));
  assert.equal(refund?.status, 'pending');
  assert.equal(refund.amountMicros, PRICE);
  assert.equal(refund.originalTxHash, settlement.txHash);
  const alerts = await db.select().from(operatorAlerts).where(eq(operatorAlerts.kind, 'x402_refund_required'));
  assert.ok(alerts.some((a) => a.resourceId === refund.id), 'an operator alert names the refund');
}

test('SIGKILL while the facilitator settles (the transfer landed, no answer came): the pending settlement is found on-chain and refunded', { timeout: 300_000 }, async () => {
  const child = await startChild();
  const payer = await payers.funded();
  chain.setFacilitatorMode('hang-settle');
  try {
    const { answered } = await payCall(child, payer, 'hang');
    for (let i = 0; (await chain.balanceOf(payer.address)) === 1_000_000n; i++) {
      assert.ok(i < 600, 'the transfer never landed');
      await sleep(25);
    }
    await kill(child);
    assert.equal(await answered, 'no answer');
  } finally {
    chain.setFacilitatorMode('normal');
  }
  assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE, 'the money moved');

  const next = await nextProcess();
  try {
    const { db, x402 } = next.container;
    const [pending] = await db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
    assert.equal(pending?.status, 'pending', 'written down before the settle');
    assert.equal(pending.txHash, null, 'the facilitator never named the transaction');
    assert.equal(await x402!.service.resolvePendingSettlements(0), 1);
    await refundedWithAlert(db, payer);
  } finally {
    await next.close();
  }
});

test('SIGKILL after the settle, inside the paid call\'s transaction: the settled settlement is swept into a refund', { timeout: 300_000 }, async () => {
  const child = await startChild({ CRASH_ONCE: '1' });
  const payer = await payers.funded();
  const { answered } = await payCall(child, payer, 'crash');
  // The fixture's charge ran and its transaction is open: the payment settled before it.
  await child.waitForLine((l) => l === 'CHARGED');
  await kill(child);
  assert.equal(await answered, 'no answer');
  assert.equal(await chain.balanceOf(payer.address), 1_000_000n - PRICE, 'the money moved');

  const next = await nextProcess();
  try {
    const { db, x402 } = next.container;
    const [settled] = await db.select().from(x402Settlements).where(eq(x402Settlements.payer, payer.address.toLowerCase()));
    assert.equal(settled?.status, 'settled', 'its outcome recorded before the call\'s transaction');
    assert.equal(await db.transaction((tx) => x402!.service.orphanStaleSettlements(tx, 0)), 1);
    await refundedWithAlert(db, payer);
  } finally {
    await next.close();
  }
});
