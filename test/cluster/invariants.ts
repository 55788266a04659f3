/**
 * What must hold after the kill test, read from the cluster's database (ledger, refunds, events,
 * deliveries, the queue), from every serve node directly, and from the webhook receiver's log. Each
 * check answers a list of violations (empty when it holds) rather than throwing at the first, so one
 * failing run says everything that went wrong.
 */
import { createHash, createHmac } from 'node:crypto';
import type pg from 'pg';
import { EVENT_NAMES } from '../../src/modules/envelopes/events.js';
import type { ReceivedRequest } from '../fixtures/receiver.js';
import type { Node } from './processes.js';
import type { Acknowledged, Fate } from './workload.js';

/** The stored types of the events webhooks carry (a consent is listed on the envelope, never delivered). */
const WEBHOOK_EVENT_TYPES = Object.keys(EVENT_NAMES);

const FINAL: Record<Fate, string> = { complete: 'COMPLETED', reject: 'REJECTED', cancel: 'CANCELLED' };
const ENDED_UNCOMPLETED = ['REJECTED', 'CANCELLED', 'EXPIRED'];
const PRICE_MICROS = 100_000n;

type Row = Record<string, unknown>;
const rows = async <T = Row>(pool: pg.Pool, text: string, values: unknown[] = []) => (await pool.query(text, values)).rows as T[];

export type Scope = { pool: pg.Pool; customerId: string; webhookId: string; webhookSecret: string; initialMicros: bigint };

/** How far the cluster still is from done: nothing left means the quiet period may end. */
export async function pending(s: Scope, acks: Acknowledged[], received: ReceivedRequest[]): Promise<string[]> {
  const out: string[] = [];
  const envs = await rows<{ id: string; status: string }>(s.pool, 'SELECT id, status FROM envelopes WHERE customer_id = $1', [s.customerId]);
  const status = new Map(envs.map((e) => [e.id, e.status]));
  const behind = acks.filter((a) => status.get(a.envelopeId) !== FINAL[a.fate]).length;
  if (behind) out.push(`${behind} envelope(s) not yet in their final status`);
  const [r] = await rows<{ n: string }>(s.pool, `SELECT count(*) AS n FROM refunds WHERE customer_id = $1 AND status <> 'succeeded'`, [s.customerId]);
  if (Number(r.n)) out.push(`${r.n} refund(s) not yet succeeded`);
  const deliveries = await rows<{ id: string; status: string }>(s.pool, 'SELECT id, status FROM webhook_deliveries WHERE webhook_id = $1', [s.webhookId]);
  const notYet = deliveries.filter((d) => d.status !== 'SUCCESS').length;
  if (notYet) out.push(`${notYet} webhook deliveries not yet SUCCESS`);
  const seen = new Set(received.map((q) => q.headers['x-service-delivery-id']));
  const unseen = deliveries.filter((d) => !seen.has(`dlv_${d.id}`)).length;
  if (unseen) out.push(`${unseen} deliveries not yet at the receiver`);
  const [e] = await rows<{ n: string }>(
    s.pool,
    `SELECT count(*) AS n FROM envelope_events e JOIN envelopes v ON v.id = e.envelope_id
      WHERE v.customer_id = $1 AND e.event_type = ANY($3) AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = e.id AND d.webhook_id = $2)`,
    [s.customerId, s.webhookId, WEBHOOK_EVENT_TYPES],
  );
  if (Number(e.n)) out.push(`${e.n} event(s) without a delivery yet`);
  return out;
}

/** Each acknowledged create exists exactly once, in the status its client drove it to, and nothing else does. */
export async function checkCreates(s: Scope, acks: Acknowledged[]): Promise<string[]> {
  const out: string[] = [];
  const envs = await rows<{ id: string; status: string; title: string }>(s.pool, 'SELECT id, status, title FROM envelopes WHERE customer_id = $1', [s.customerId]);
  const byId = new Map(envs.map((e) => [e.id, e]));
  const ackIds = new Set(acks.map((a) => a.envelopeId));
  if (ackIds.size !== acks.length) out.push(`${acks.length} creates acknowledged ${ackIds.size} distinct envelopes: two keys answered the same envelope`);
  for (const a of acks) {
    const e = byId.get(a.envelopeId);
    if (!e) out.push(`acknowledged envelope ${a.envelopeId} (${a.title}) does not exist`);
    else if (e.status !== FINAL[a.fate]) out.push(`${a.title} is ${e.status}, its client made it ${FINAL[a.fate]}`);
    else if (e.title !== a.title) out.push(`${a.envelopeId} is titled "${e.title}", its create said "${a.title}"`);
  }
  for (const e of envs) if (!ackIds.has(e.id)) out.push(`envelope ${e.id} (${e.title}) exists but no create was acknowledged for it (a duplicate?)`);
  const keys = await rows<{ key: string; state: string }>(s.pool, `SELECT key, state FROM idempotency_keys WHERE customer_id = $1`, [s.customerId]);
  const state = new Map(keys.map((k) => [k.key, k.state]));
  for (const a of acks) if (state.get(a.key) !== 'done') out.push(`the Idempotency-Key of ${a.title} is ${state.get(a.key) ?? 'missing'}, not done`);
  return out;
}

/** Every document through every serve node directly: the original as uploaded, the sealed PDF once COMPLETED. */
export async function checkDocuments(serves: Node[], apiKey: string, acks: Acknowledged[]): Promise<{ violations: string[]; reads: number }> {
  const out: string[] = [];
  let reads = 0;
  const get = async (node: Node, path: string) => {
    reads++;
    const res = await fetch(`${node.base}${path}`, { headers: { authorization: `Bearer ${apiKey}` } });
    return { status: res.status, bytes: new Uint8Array(await res.arrayBuffer()) };
  };
  const jobs = acks.flatMap((a, i) => [
    ...serves.map((n) => async () => {
      const r = await get(n, `/v1/envelopes/${a.envelopeId}/download?version=original`);
      if (r.status !== 200) out.push(`${n.name}: original of ${a.title} answered ${r.status}`);
      else if (createHash('sha256').update(r.bytes).digest('hex') !== a.sha256) out.push(`${n.name}: original of ${a.title} is not the uploaded PDF`);
    }),
    ...(a.fate === 'complete'
      ? [
          async () => {
            const n = serves[i % serves.length];
            const r = await get(n, `/v1/envelopes/${a.envelopeId}/download?version=signed`);
            const head = Buffer.from(r.bytes.subarray(0, 5)).toString('latin1');
            if (r.status !== 200 || head !== '%PDF-') out.push(`${n.name}: sealed PDF of ${a.title} answered ${r.status} (${head})`);
          },
        ]
      : []),
  ]);
  let next = 0;
  await Promise.all(Array.from({ length: 4 }, async () => { while (next < jobs.length) await jobs[next++](); }));
  return { violations: out, reads };
}

/**
 * Money: one debit per envelope, of what it was charged, and no debit without an envelope; exactly
 * one refund (row and ledger credit) per envelope that ended without completing, none otherwise; the
 * balance is what the ledger says.
 */
export async function checkMoney(s: Scope, acks: Acknowledged[]): Promise<string[]> {
  const out: string[] = [];
  const envs = await rows<{ id: string; status: string; charged_micros: string }>(s.pool, 'SELECT id, status, charged_micros FROM envelopes WHERE customer_id = $1', [s.customerId]);
  const ledger = await rows<{ direction: string; envelope_id: string | null; amount_micros: string }>(s.pool, 'SELECT direction, envelope_id, amount_micros FROM ledger_entries WHERE customer_id = $1', [s.customerId]);
  const refunds = await rows<{ envelope_id: string; status: string; amount_micros: string }>(s.pool, 'SELECT envelope_id, status, amount_micros FROM refunds WHERE customer_id = $1', [s.customerId]);
  const known = new Set(acks.map((a) => a.envelopeId));
  const of = (dir: string, id: string) => ledger.filter((l) => l.direction === dir && l.envelope_id === id);
  for (const l of ledger) {
    if (l.direction === 'debit' && (!l.envelope_id || !known.has(l.envelope_id))) out.push(`a debit of ${l.amount_micros} micros matches no acknowledged envelope (${l.envelope_id})`);
  }
  for (const e of envs) {
    const debits = of('debit', e.id);
    if (debits.length !== 1) out.push(`envelope ${e.id} has ${debits.length} debits`);
    else if (BigInt(debits[0].amount_micros) !== BigInt(e.charged_micros) || BigInt(e.charged_micros) !== PRICE_MICROS) out.push(`envelope ${e.id}: debit ${debits[0].amount_micros}, charged ${e.charged_micros}`);
    const rs = refunds.filter((r) => r.envelope_id === e.id);
    const credits = of('refund', e.id);
    if (ENDED_UNCOMPLETED.includes(e.status)) {
      if (rs.length !== 1 || rs[0].status !== 'succeeded') out.push(`${e.status} envelope ${e.id} has ${rs.length} refund row(s) (${rs.map((r) => r.status).join(', ')})`);
      if (credits.length !== 1 || BigInt(credits[0].amount_micros) !== BigInt(e.charged_micros)) out.push(`${e.status} envelope ${e.id} has ${credits.length} refund credit(s) in the ledger`);
    } else if (rs.length || credits.length) out.push(`${e.status} envelope ${e.id} was refunded`);
  }
  const sum = (dir: string) => ledger.filter((l) => l.direction === dir).reduce((n, l) => n + BigInt(l.amount_micros), 0n);
  const [c] = await rows<{ balance_micros: string }>(s.pool, 'SELECT balance_micros FROM customers WHERE id = $1', [s.customerId]);
  if (sum('credit') !== s.initialMicros) out.push(`credits of ${sum('credit')} micros, the opening credit was ${s.initialMicros}`);
  const expected = sum('credit') - sum('debit') + sum('refund');
  if (BigInt(c.balance_micros) !== expected) out.push(`balance ${c.balance_micros} micros, the ledger says ${expected}`);
  return out;
}

/**
 * Webhooks: every event has one delivery and reached the receiver at least once, signed with the
 * registration's secret; a delivery id always carried the same event (name and envelope as it was).
 */
export async function checkWebhooks(s: Scope, received: ReceivedRequest[]): Promise<{ violations: string[]; deliveries: number; events: number; repeats: number }> {
  const out: string[] = [];
  const events = await rows<{ id: string }>(s.pool, 'SELECT e.id FROM envelope_events e JOIN envelopes v ON v.id = e.envelope_id WHERE v.customer_id = $1 AND e.event_type = ANY($2)', [s.customerId, WEBHOOK_EVENT_TYPES]);
  const deliveries = await rows<{ id: string; event: string; envelope_id: string; event_id: string | null; status: string }>(
    s.pool,
    'SELECT id, event, envelope_id, event_id, status FROM webhook_deliveries WHERE webhook_id = $1',
    [s.webhookId],
  );
  const perEvent = new Map<string, number>();
  for (const d of deliveries) if (d.event_id !== null) perEvent.set(String(d.event_id), (perEvent.get(String(d.event_id)) ?? 0) + 1);
  for (const e of events) if (perEvent.get(String(e.id)) !== 1) out.push(`event ${e.id} has ${perEvent.get(String(e.id)) ?? 0} deliveries`);

  const byDelivery = new Map<string, ReceivedRequest[]>();
  for (const q of received) {
    const id = String(q.headers['x-service-delivery-id']);
    byDelivery.set(id, [...(byDelivery.get(id) ?? []), q]);
    const sig = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(String(q.headers['x-service-signature']));
    const expected = sig && createHmac('sha256', s.webhookSecret).update(`${sig[1]}.${q.raw.toString('utf8')}`).digest('hex');
    if (!sig || sig[2] !== expected) out.push(`${id}: the signature does not verify`);
  }
  for (const d of deliveries) {
    const got = byDelivery.get(`dlv_${d.id}`) ?? [];
    if (d.status !== 'SUCCESS') out.push(`delivery ${d.id} (${d.event}) is ${d.status}`);
    if (!got.length) out.push(`delivery ${d.id} (${d.event} of ${d.envelope_id}) never reached the receiver`);
    for (const q of got) {
      const body = JSON.parse(q.raw.toString('utf8')) as { event: string; envelope: { envelopeId: string } };
      if (q.headers['x-service-event'] !== d.event || body.event !== d.event || body.envelope.envelopeId !== d.envelope_id) {
        out.push(`dlv_${d.id} carried ${body.event} of ${body.envelope.envelopeId}; it is ${d.event} of ${d.envelope_id}`);
      }
    }
  }
  const ours = new Set(deliveries.map((d) => `dlv_${d.id}`));
  let repeats = 0;
  for (const [id, got] of byDelivery) {
    repeats += got.length - 1;
    // The body differs between attempts only by deliveredAt; the event and the envelope are fixed.
    const identity = new Set(got.map((q) => {
      const { event, envelope } = JSON.parse(q.raw.toString('utf8'));
      return JSON.stringify([q.headers['x-service-event'], event, envelope]);
    }));
    if (identity.size > 1) out.push(`${id} carried ${identity.size} different events`);
    if (!ours.has(id)) out.push(`${id} reached the receiver but is no delivery of ours`);
  }
  return { violations: out, deliveries: deliveries.length, events: events.length, repeats };
}

/** No job ended dead: a job whose worker was killed on every attempt would be work lost. */
export async function checkQueue(pool: pg.Pool): Promise<string[]> {
  const dead = await rows<{ type: string; n: string }>(pool, `SELECT type, count(*) AS n FROM jobs WHERE status = 'dead' GROUP BY type`);
  return dead.map((d) => `${d.n} ${d.type} job(s) ended dead`);
}
