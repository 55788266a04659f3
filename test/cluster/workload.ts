/**
 * The cluster test's traffic, through nginx, as a careful client sends it: creates with an
 * Idempotency-Key, retried with the same key until one is acknowledged; then each envelope is signed
 * by both signers through the recipient routes (what the signing page does), rejected by one, or
 * cancelled. A retry follows anything that says "not reached" (a connection error, a 502/503/504 from
 * nginx, 409 IDEMPOTENCY_KEY_IN_USE while a dead node's reservation lease runs out); whatever else
 * comes back is the answer, and an unexpected one fails the test.
 */
import { createHash, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { PDF } from '@libpdf/core';

export type Fate = 'complete' | 'reject' | 'cancel';

export type Acknowledged = {
  key: string;
  envelopeId: string;
  title: string;
  sha256: string;
  fate: Fate;
  /** How many times the create was sent before its answer came back. */
  attempts: number;
  replayed: boolean;
};

export type WorkloadStats = {
  creates: number;
  /** Creates that needed more than one attempt. */
  retriedCreates: number;
  /** Answers with Idempotent-Replayed: true. */
  replayed: number;
  /** Requests sent again after a connection error, 502/503/504 or 409 IDEMPOTENCY_KEY_IN_USE. */
  retries: number;
  signings: number;
  rejections: number;
  cancellations: number;
  /** Signing POSTs whose retry found the first attempt had taken effect (409 ALREADY_ACTED). */
  alreadyActed: number;
};

const PNG = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';
const RETRY_WITHIN_MS = 120_000;
const FATES: Fate[] = ['complete', 'complete', 'reject', 'complete', 'cancel'];

type Answer = { status: number; text: string; headers: Headers; json<T = Record<string, unknown>>(): T };

export class WorkloadError extends Error {}

async function pdfFor(title: string): Promise<Uint8Array> {
  const pdf = PDF.create();
  pdf.addPage({ size: 'letter' }).drawText(`${title}: ${randomUUID()}`, { x: 72, y: 700, size: 14 });
  return pdf.save();
}

function multipart(pdf: Uint8Array, payload: unknown): { body: Uint8Array<ArrayBuffer>; contentType: string } {
  const boundary = `----signet-cluster-${randomUUID()}`;
  const head = (name: string, extra = '') => `--${boundary}\r\nContent-Disposition: form-data; name="${name}"${extra}\r\n`;
  const body = Buffer.concat([
    Buffer.from(`${head('pdf', '; filename="doc.pdf"')}Content-Type: application/pdf\r\n\r\n`),
    Buffer.from(pdf),
    Buffer.from(`\r\n${head('payload')}\r\n${JSON.stringify(payload)}\r\n--${boundary}--\r\n`),
  ]);
  return { body: new Uint8Array(body) as Uint8Array<ArrayBuffer>, contentType: `multipart/form-data; boundary=${boundary}` };
}

export function createWorkload(opts: { url: string; apiKey: string }) {
  const stats: WorkloadStats = { creates: 0, retriedCreates: 0, replayed: 0, retries: 0, signings: 0, rejections: 0, cancellations: 0, alreadyActed: 0 };
  const acknowledged: Acknowledged[] = [];
  /** Creates sent and not yet answered: the kill loop aims at them. */
  const inFlight = { creates: 0 };

  /** Sends until the answer is not a "did not reach / try again"; `attempts` counts sends. */
  async function untilAnswered(what: string, send: () => Promise<Response>): Promise<Answer & { attempts: number }> {
    const deadline = Date.now() + RETRY_WITHIN_MS;
    for (let attempts = 1; ; attempts++) {
      let why: string;
      try {
        const res = await send();
        const text = await res.text();
        const code = res.status === 409 ? /"code"\s*:\s*"([A-Z_]+)"/.exec(text)?.[1] : undefined;
        if (![502, 503, 504].includes(res.status) && code !== 'IDEMPOTENCY_KEY_IN_USE') {
          return { status: res.status, text, headers: res.headers, attempts, json: <T>() => JSON.parse(text) as T };
        }
        why = `${res.status} ${text.slice(0, 200)}`;
      } catch (err) {
        why = String((err as Error).cause ?? err);
      }
      if (Date.now() > deadline) throw new WorkloadError(`${what}: no answer within ${RETRY_WITHIN_MS / 1000} s; last: ${why}`);
      stats.retries++;
      await sleep(Math.min(1_000, 100 * attempts));
    }
  }

  const request = (path: string, init: RequestInit = {}) => () => fetch(`${opts.url}${path}`, { ...init, signal: AbortSignal.timeout(60_000) });
  const authed = (extra: Record<string, string> = {}) => ({ authorization: `Bearer ${opts.apiKey}`, ...extra });

  function expect(a: Answer, status: number | number[], what: string): void {
    if (!([] as number[]).concat(status).includes(a.status)) throw new WorkloadError(`${what} answered ${a.status}: ${a.text.slice(0, 500)}`);
  }

  async function create(title: string, fate: Fate): Promise<{ ack: Acknowledged; tokens: string[] }> {
    const pdf = await pdfFor(title);
    const signers = [1, 2].map((n) => ({ email: `s${n}-${randomUUID().slice(0, 8)}@example.com`, name: `Signer ${n}`, role: 'SIGNER' }));
    const mp = multipart(pdf, {
      title,
      recipients: signers,
      fields: signers.map((s, i) => ({ type: 'SIGNATURE', recipientEmail: s.email, page: 1, positionX: 10 + 45 * i, positionY: 80, width: 30, height: 6 })),
    });
    const key = randomUUID();
    inFlight.creates++;
    const a = await untilAnswered(`create ${title}`, request('/v1/envelopes', { method: 'POST', headers: authed({ 'content-type': mp.contentType, 'idempotency-key': key }), body: mp.body })).finally(() => inFlight.creates--);
    expect(a, 201, `POST /v1/envelopes (${title})`);
    const env = a.json<{ envelopeId: string; recipients: { email: string; signingUrl: string }[] }>();
    const replayed = a.headers.get('idempotent-replayed') === 'true';
    const ack: Acknowledged = { key, envelopeId: env.envelopeId, title, sha256: createHash('sha256').update(pdf).digest('hex'), fate, attempts: a.attempts, replayed };
    acknowledged.push(ack);
    stats.creates++;
    if (a.attempts > 1) stats.retriedCreates++;
    if (replayed) stats.replayed++;
    const tokens = signers.map((s) => new URL(env.recipients.find((r) => r.email === s.email)!.signingUrl).pathname.split('/').pop()!);
    return { ack, tokens };
  }

  /** What the signing page does: the session (records the view), the document, then consent and complete, or reject. */
  async function act(token: string, action: 'complete' | 'reject', title: string): Promise<void> {
    const s = await untilAnswered('GET session', request(`/sign/${token}/session`));
    expect(s, 200, `GET /sign/{token}/session (${title})`);
    const session = s.json<{ canAct: boolean; reason: string | null; fields: { fieldId: number }[]; documentUrl: string | null }>();
    if (!session.canAct) throw new WorkloadError(`${title}: the recipient cannot act: ${session.reason}`);
    const doc = await untilAnswered('GET document', request(session.documentUrl ?? `/sign/${token}/document`));
    expect(doc, 200, `GET /sign/{token}/document (${title})`);
    const body =
      action === 'complete'
        ? { fields: session.fields.map((f) => ({ fieldId: f.fieldId, value: null })), signature: { kind: 'drawn', image: PNG } }
        : { reason: 'Not what we agreed' };
    if (action === 'complete') {
      // Consent is asked once: a retry after a lost answer finds it recorded and is answered the same.
      const c = await untilAnswered('POST consent', request(`/sign/${token}/consent`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' }));
      expect(c, 200, `POST /sign/{token}/consent (${title})`);
    }
    const a = await untilAnswered(`POST ${action}`, request(`/sign/${token}/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }));
    // A retry after the first attempt took effect (its answer was lost with the node) finds it done.
    if (a.status === 409 && a.json().code === 'ALREADY_ACTED') stats.alreadyActed++;
    else expect(a, 200, `POST /sign/{token}/${action} (${title})`);
    if (action === 'complete') stats.signings++;
    else stats.rejections++;
  }

  async function cancel(envelopeId: string, title: string): Promise<void> {
    const a = await untilAnswered('DELETE envelope', request(`/v1/envelopes/${envelopeId}`, { method: 'DELETE', headers: authed({ 'idempotency-key': randomUUID() }) }));
    expect(a, 200, `DELETE /v1/envelopes/{id} (${title})`);
    stats.cancellations++;
  }

  /** `loops` clients, each one envelope at a time, until `until()` says stop; resolves when all finished theirs. */
  async function run(loops: number, until: () => boolean): Promise<void> {
    const loop = async (n: number) => {
      for (let i = 0; !until(); i++) {
        const title = `cluster ${n}-${i}`;
        const fate = FATES[(n + i) % FATES.length];
        const { ack, tokens } = await create(title, fate);
        if (fate === 'complete') for (const t of tokens) await act(t, 'complete', title);
        else if (fate === 'reject') await act(tokens[0], 'reject', title);
        else await cancel(ack.envelopeId, title);
      }
    };
    await Promise.all(Array.from({ length: loops }, (_, n) => loop(n + 1)));
  }

  return { stats, acknowledged, inFlight, run };
}
