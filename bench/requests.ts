/**
 * The requests the bench sends to Signet and to the create floor, and what they need made first
 * (a template, drafts). Everything goes through the public API, as a client would.
 */
import { randomUUID } from 'node:crypto';
import { PDF } from '@libpdf/core';

export type Client = { base: string; apiKey: string };

export const SIGNERS = [
  { email: 'a@example.com', name: 'A', role: 'SIGNER' },
  { email: 'b@example.com', name: 'B', role: 'SIGNER' },
];

/** A PDF of `pages` letter pages with a line of text on each. */
export async function textPdf(pages: number, title = 'Bench agreement'): Promise<Uint8Array> {
  const pdf = PDF.create();
  for (let i = 1; i <= pages; i++) pdf.addPage({ size: 'letter' }).drawText(`${title}, page ${i} of ${pages}`, { x: 72, y: 700, size: 14 });
  return pdf.save();
}

/** A multipart body, encoded once (the same bytes for every request of a run). */
export async function multipart(parts: Record<string, string | { bytes: Uint8Array; filename: string; type: string }>): Promise<{ body: Buffer; contentType: string }> {
  const form = new FormData();
  for (const [name, value] of Object.entries(parts)) {
    if (typeof value === 'string') form.append(name, value);
    else form.append(name, new Blob([Buffer.from(value.bytes)], { type: value.type }), value.filename);
  }
  const res = new Response(form);
  return { body: Buffer.from(await res.arrayBuffer()), contentType: res.headers.get('content-type')! };
}

const signatureAt = (recipient: Record<string, unknown>, page: number, y: number) => ({ type: 'SIGNATURE', ...recipient, page, positionX: 10, positionY: y, width: 30, height: 6 });

/** Create-and-send: the PDF and two signers with a signature field each, by coordinates (the last page for the second). */
export async function createAndSendBody(pdf: Uint8Array, pages = 1, title = 'Bench'): Promise<{ body: Buffer; contentType: string }> {
  return multipart({
    pdf: { bytes: pdf, filename: 'bench.pdf', type: 'application/pdf' },
    payload: JSON.stringify({
      title,
      recipients: SIGNERS,
      fields: [signatureAt({ recipientEmail: SIGNERS[0].email }, 1, 70), signatureAt({ recipientEmail: SIGNERS[1].email }, pages, 80)],
    }),
  });
}

/** The JSON answer, or an error naming the request when the status is not the expected one. */
export async function expectStatus<T>(res: Response, status: number, what: string): Promise<T> {
  const text = await res.text();
  if (res.status !== status) throw new Error(`${what} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

export const authed = (c: Client, extra: Record<string, string> = {}) => ({ authorization: `Bearer ${c.apiKey}`, ...extra });

/** A template of the same 1-page PDF with two SIGNER slots, a signature field each. */
export async function createTemplate(c: Client, pdf: Uint8Array): Promise<string> {
  const mp = await multipart({
    file: { bytes: pdf, filename: 'template.pdf', type: 'application/pdf' },
    payload: JSON.stringify({
      title: 'Bench template',
      recipients: SIGNERS.map((s, i) => ({ ...s, email: `slot${i + 1}@example.com` })),
      fields: [signatureAt({ recipientId: 1 }, 1, 70), signatureAt({ recipientId: 2 }, 1, 80)],
    }),
  });
  const res = await fetch(`${c.base}/v1/templates`, { method: 'POST', headers: authed(c, { 'content-type': mp.contentType, 'idempotency-key': randomUUID() }), body: new Uint8Array(mp.body) });
  return (await expectStatus<{ templateId: string }>(res, 201, 'POST /v1/templates')).templateId;
}

/** The from-template body: both slots mapped to people; sent at once or kept as a DRAFT. */
export const fromTemplateBody = (sendImmediately: boolean) => JSON.stringify({ sendImmediately, recipients: SIGNERS.map((s, i) => ({ id: i + 1, email: s.email, name: s.name })) });

/** `n` DRAFT envelopes from the template, `concurrency` requests at a time; their ids. */
export async function makeDrafts(c: Client, templateId: string, n: number, concurrency: number): Promise<string[]> {
  const ids: string[] = [];
  const body = fromTemplateBody(false);
  let next = 0;
  const one = async (): Promise<void> => {
    while (next < n) {
      next++;
      const res = await fetch(`${c.base}/v1/templates/${templateId}/from-template`, {
        method: 'POST',
        headers: authed(c, { 'content-type': 'application/json', 'idempotency-key': randomUUID() }),
        body,
      });
      const env = await expectStatus<{ envelopeId: string; status: string }>(res, 201, 'draft from template');
      if (env.status !== 'DRAFT') throw new Error(`a draft from the template is ${env.status}`);
      ids.push(env.envelopeId);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, one));
  return ids;
}

export type Created = { envelopeId: string; status: string; recipients: { email: string; signingUrl: string }[] };

export async function postEnvelope(c: Client, mp: { body: Buffer; contentType: string }): Promise<Created> {
  const res = await fetch(`${c.base}/v1/envelopes`, { method: 'POST', headers: authed(c, { 'content-type': mp.contentType, 'idempotency-key': randomUUID() }), body: new Uint8Array(mp.body) });
  return expectStatus<Created>(res, 201, 'POST /v1/envelopes');
}
