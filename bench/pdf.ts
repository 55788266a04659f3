/**
 * The PDF layer's benchmark: marker detection on a 50-page PDF, and the whole completion pipeline
 * (marker removal, stamping, audit certificate, flatten, PAdES seal) against a bare @libpdf/core
 * load + sign of the same file, on 10 and 100 pages with an image on every page.
 *
 * Standalone: `tsx bench/pdf.ts`; bench/run.ts calls benchPdf() and prints the rows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PDF } from '@libpdf/core';
import { findMarkers } from '../src/pdf/markers.js';
import { closePdfWorkers, prepareDocument } from '../src/pdf/prepare.js';
import { sealDocument } from '../src/pdf/seal.js';
import type { CertificateData, StampField } from '../src/pdf/types.js';
import { loadSigner } from '../src/providers/certs/signer.js';
import { imagePdf, manyPagesPdf, signaturePng } from '../test/fixtures/pdfs.js';

export type PdfBenchRow = {
  name: string;
  /** Median wall time of the measured runs. */
  medianMs: number;
  runs: number;
  /** For the pipeline: its median over the bare seal's median. */
  ratio?: number;
  goal: string;
  met: boolean;
};

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

async function timeRuns(runs: number, warmup: number, fn: () => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < warmup; i++) await fn();
  const out: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t = performance.now();
    await fn();
    out.push(performance.now() - t);
  }
  return out;
}

function certificateFor(sha256: string): CertificateData {
  const at = (m: number) => new Date(Date.UTC(2025, 2, 1, 10, m)).toISOString();
  return {
    envelopeId: 'bench-envelope',
    title: 'Benchmark agreement',
    documentSha256: sha256,
    completedAt: at(30),
    recipients: [
      { name: 'Ana Pereira', email: 'ana@example.com', role: 'SIGNER', status: 'SIGNED', ip: '203.0.113.7', userAgent: 'Mozilla/5.0 (X11; Linux x86_64) Chrome/124.0', viewedAt: at(1), signedAt: at(5) },
      { name: 'Bo Chen', email: 'bo@example.com', role: 'SIGNER', status: 'SIGNED', ip: '203.0.113.8', userAgent: 'Mozilla/5.0 (iPhone) Safari/604.1', viewedAt: at(10), signedAt: at(20) },
    ],
    events: ['DOCUMENT_SENT', 'DOCUMENT_VIEWED', 'DOCUMENT_SIGNED', 'DOCUMENT_VIEWED', 'DOCUMENT_SIGNED', 'DOCUMENT_COMPLETED'].map((event, i) => ({ at: at(i * 4), event, recipientEmail: i % 2 ? 'ana@example.com' : 'bo@example.com', ip: '203.0.113.7' })),
  };
}

/** Two signers' fields on the last page (drawn signature, name, date) and one on the first. */
function fieldsFor(pages: number, signature: Uint8Array): StampField[] {
  const last = pages;
  return [
    { page: 1, x: 10, y: 88, width: 30, height: 3, type: 'TEXT', value: 'Ref. 2025-0042' },
    { page: last, x: 10, y: 80, width: 30, height: 6, type: 'SIGNATURE', value: null, image: signature },
    { page: last, x: 45, y: 80, width: 25, height: 3, type: 'NAME', value: 'Ana Pereira' },
    { page: last, x: 75, y: 80, width: 15, height: 3, type: 'DATE', value: '2025-03-01' },
    { page: last, x: 10, y: 88, width: 30, height: 6, type: 'SIGNATURE', value: 'Bo Chen' },
    { page: last, x: 45, y: 88, width: 25, height: 3, type: 'NAME', value: 'Bo Chen' },
    { page: last, x: 75, y: 88, width: 4, height: 3, type: 'CHECKBOX', value: 'true' },
  ];
}

export async function benchPdf(opts: { runs?: number } = {}): Promise<PdfBenchRow[]> {
  const runs = opts.runs ?? 10;
  const rows: PdfBenchRow[] = [];
  const dataDir = mkdtempSync(path.join(tmpdir(), 'signet-bench-pdf-'));
  try {
    const { signer } = await loadSigner({ dataDir });

    // (a) Marker detection on 50 pages: in-process on a loaded document, and as an upload sees it
    // (prepareDocument: worker round trip, load, page boxes, markers, SHA-256; warm worker).
    const { bytes: fifty } = await manyPagesPdf(50);
    const loaded = await PDF.load(fifty);
    const detect = await timeRuns(runs, 2, async () => {
      if (findMarkers(loaded).markers.length !== 50) throw new Error('marker detection found the wrong number of markers');
    });
    rows.push({ name: 'marker detection, 50 pages (in process)', medianMs: median(detect), runs, goal: '<= 300 ms', met: median(detect) <= 300 });
    const limits = { timeoutMs: 60_000, maxMemoryMb: 512 };
    const prepared = await timeRuns(runs, 2, () => prepareDocument([fifty], limits));
    rows.push({ name: 'prepareDocument, 50 pages (worker: load + markers + hash)', medianMs: median(prepared), runs, goal: '<= 300 ms', met: median(prepared) <= 300 });

    // (b) The completion pipeline against a bare seal of the same file.
    const signature = signaturePng();
    for (const pages of [10, 100]) {
      const original = await imagePdf(pages);
      const doc = await prepareDocument([original], limits);
      const bytes = doc.bytes;
      const certificate = certificateFor(doc.sha256);
      const fields = fieldsFor(pages, signature);
      const n = runs;
      // Interleaved, so both see the same machine state (GC, CPU frequency).
      const bare: number[] = [];
      const full: number[] = [];
      for (let i = 0; i < n + 2; i++) {
        let t = performance.now();
        const pdf = await PDF.load(bytes);
        await pdf.sign({ signer });
        if (i >= 2) bare.push(performance.now() - t);
        t = performance.now();
        await sealDocument({ original: bytes, fields, hide: [], certificate, signer });
        if (i >= 2) full.push(performance.now() - t);
      }
      const mb = (original.length / 1048576).toFixed(1);
      rows.push({ name: `bare PDF.load + pdf.sign, ${pages} pages (${mb} MB)`, medianMs: median(bare), runs: n, goal: 'baseline', met: true });
      const ratio = median(full) / median(bare);
      rows.push({ name: `completion pipeline, ${pages} pages (${mb} MB)`, medianMs: median(full), runs: n, ratio, goal: '<= 2x bare', met: ratio <= 2 });
    }
    return rows;
  } finally {
    await closePdfWorkers();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

export function formatPdfRows(rows: PdfBenchRow[]): string {
  const lines = rows.map((r) => `${r.name.padEnd(62)} ${r.medianMs.toFixed(1).padStart(8)} ms  ${r.ratio !== undefined ? `${r.ratio.toFixed(2)}x`.padStart(6) : ''.padStart(6)}  ${r.goal.padEnd(10)} ${r.goal === 'baseline' ? '' : r.met ? 'met' : 'NOT MET'}`);
  return [`${'PDF scenario'.padEnd(62)} ${'median'.padStart(11)}  ${'ratio'.padStart(6)}  goal`, ...lines].join('\n');
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(formatPdfRows(await benchPdf()));
}
