import { randomBytes, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { deflateSync } from 'node:zlib';
import { PDF } from '@libpdf/core';
import { readRssKb, withServer } from './idle-rss.js';
import { createCustomer, type DbKind } from './servers.js';

/** A PNG of random noise (incompressible), so the PDF carrying it is about as large as its pixels. */
function noisePng(width: number, height: number): Uint8Array {
  const row = 1 + width * 3;
  const raw = Buffer.alloc(row * height);
  for (let y = 0; y < height; y++) randomBytes(width * 3).copy(raw, y * row + 1);
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (buf: Buffer) => {
    let c = 0xffffffff;
    for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const len = Buffer.alloc(4);
    len.writeUInt32BE(data.length);
    const td = Buffer.concat([Buffer.from(type), data]);
    const c = Buffer.alloc(4);
    c.writeUInt32BE(crc(td));
    return Buffer.concat([len, td, c]);
  };
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr.set([8, 2, 0, 0, 0], 8);
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk('IHDR', ihdr), chunk('IDAT', deflateSync(raw, { level: 0 })), chunk('IEND', Buffer.alloc(0))]);
}

async function smallPdf(): Promise<Uint8Array> {
  const pdf = PDF.create();
  pdf.addPage({ size: 'letter' }).drawText('{{signature, r1}}', { x: 72, y: 700 });
  return pdf.save();
}

/** A one-page PDF of about `mb` megabytes. */
export async function bigPdf(mb: number): Promise<Uint8Array> {
  const side = Math.round(Math.sqrt((mb * 1_000_000) / 3));
  const pdf = PDF.create();
  const page = pdf.addPage({ size: 'letter' });
  page.drawImage(await pdf.embedPng(noisePng(side, side)), { x: 36, y: 36, width: 540, height: 540 });
  page.drawText('{{signature, r1}}', { x: 72, y: 700 });
  return pdf.save();
}

/**
 * Server RSS while it takes a create-and-send of a large PDF. A small create goes first: the first upload
 * of a quiet spell starts the PDF parsing worker (it retires after 30 s idle), a fixed cost reported
 * apart (`workerKb`) so that the large upload's peak, sampled every 10 ms from its start until the answer,
 * is compared with idle RSS as it is while uploads come.
 */
export async function measureUploadRss(kind: DbKind, databaseUrl: string | undefined, pdf: Uint8Array) {
  return withServer(
    kind,
    databaseUrl,
    async (base, pid) => {
      const created = await createCustomer(base, 100);
      const upload = async (file: Uint8Array) => {
        const form = new FormData();
        form.append('pdf', new Blob([Buffer.from(file)], { type: 'application/pdf' }), 'big.pdf');
        form.append('payload', JSON.stringify({ title: 'Big', recipients: [{ email: 'a@example.com', name: 'A', role: 'SIGNER' }] }));
        const res = await fetch(`${base}/v1/envelopes`, { method: 'POST', headers: { authorization: `Bearer ${created.apiKey}`, 'idempotency-key': randomUUID() }, body: form });
        if (res.status !== 201) throw new Error(`upload answered ${res.status}: ${await res.text()}`);
      };
      await sleep(2000);
      const coldKb = readRssKb(pid) ?? 0;
      await upload(await smallPdf());
      await sleep(1000);
      const idleKb = readRssKb(pid) ?? 0;
      let peakKb = idleKb;
      const sampler = setInterval(() => (peakKb = Math.max(peakKb, readRssKb(pid) ?? 0)), 10);
      const started = Date.now();
      await upload(pdf);
      const ms = Date.now() - started;
      await sleep(50);
      clearInterval(sampler);
      return { idleKb, peakKb, ms, workerKb: idleKb - coldKb };
    },
    { MAX_PDF_BYTES: String(30 * 1024 * 1024) },
  );
}
