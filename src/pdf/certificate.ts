import { layoutText, measureText, rgb, type PDF, type PDFPage, type Standard14FontName } from '@libpdf/core';
import { winAnsi } from './text.js';
import type { CertificateData } from './types.js';

// A4 portrait: the certificate reads the same whatever the document's page size.
const PAGE = { width: 595.28, height: 841.89 };
const MARGIN = 50;
const FOOTER = 30;
const CONTENT_WIDTH = PAGE.width - 2 * MARGIN;
const GREY = rgb(0.38, 0.4, 0.45);
const DARK = rgb(0.08, 0.09, 0.12);
const RULE = rgb(0.82, 0.84, 0.88);
const RED = rgb(0.75, 0.1, 0.1);

type Style = { font?: Standard14FontName; size?: number; color?: ReturnType<typeof rgb>; indent?: number };

/** Writes flowing lines top to bottom, starting a new page when the next line does not fit. */
class Writer {
  readonly pages: PDFPage[] = [];
  private page!: PDFPage;
  private y = 0;

  constructor(private readonly pdf: PDF) {
    this.newPage();
  }

  newPage(): void {
    this.page = this.pdf.addPage({ width: PAGE.width, height: PAGE.height });
    this.pages.push(this.page);
    this.y = PAGE.height - MARGIN;
  }

  ensure(height: number): void {
    if (this.y - height < MARGIN + FOOTER) this.newPage();
  }

  gap(h: number): void {
    this.y -= h;
  }

  /** One paragraph, wrapped to the content width. */
  text(value: string, style: Style = {}): void {
    const font = style.font ?? 'Helvetica';
    const size = style.size ?? 9.5;
    const indent = style.indent ?? 0;
    const leading = size * 1.3;
    for (const line of wrap(value, font, size, CONTENT_WIDTH - indent)) {
      this.ensure(leading);
      this.y -= leading;
      this.page.drawText(line, { x: MARGIN + indent, y: this.y + size * 0.25, font, size, color: style.color ?? DARK });
    }
  }

  /** "Label   value" with the value wrapped in its own column. */
  field(label: string, value: string, style: Style = {}): void {
    const size = style.size ?? 9.5;
    const labelWidth = 105;
    const indent = style.indent ?? 0;
    const font = style.font ?? 'Helvetica';
    const lines = wrap(value, font, size, CONTENT_WIDTH - indent - labelWidth);
    const leading = size * 1.3;
    lines.forEach((line, i) => {
      this.ensure(leading);
      this.y -= leading;
      if (i === 0) this.page.drawText(winAnsi(label), { x: MARGIN + indent, y: this.y + size * 0.25, font: 'Helvetica', size, color: GREY });
      this.page.drawText(line, { x: MARGIN + indent + labelWidth, y: this.y + size * 0.25, font, size, color: DARK });
    });
  }

  /** A table row: each cell cut to its column width. */
  row(cells: string[], widths: number[], style: Style = {}): void {
    const size = style.size ?? 8;
    const font = style.font ?? 'Helvetica';
    const leading = size * 1.45;
    this.ensure(leading);
    this.y -= leading;
    let x = MARGIN;
    cells.forEach((cell, i) => {
      this.page.drawText(cut(cell, font, size, widths[i] - 6), { x, y: this.y + size * 0.3, font, size, color: style.color ?? DARK });
      x += widths[i];
    });
  }

  rule(): void {
    this.ensure(8);
    this.y -= 4;
    this.page.drawLine({ start: { x: MARGIN, y: this.y }, end: { x: PAGE.width - MARGIN, y: this.y }, color: RULE, thickness: 0.7 });
    this.y -= 4;
  }

  heading(title: string): void {
    this.ensure(40);
    this.gap(10);
    this.text(title, { font: 'Helvetica-Bold', size: 12.5 });
    this.rule();
  }
}

function wrap(value: string, font: Standard14FontName, size: number, width: number): string[] {
  const text = winAnsi(value);
  if (!text) return [''];
  const lines = layoutText(text, font, size, width, size * 1.3).lines.map((l) => l.text);
  // layoutText breaks at spaces; a long unbroken token (a user agent, a hash) is split by width.
  return lines.flatMap((line) => splitLong(line, font, size, width));
}

function splitLong(line: string, font: Standard14FontName, size: number, width: number): string[] {
  if (measureText(line, font, size) <= width) return [line];
  const out: string[] = [];
  let current = '';
  for (const ch of line) {
    if (current && measureText(current + ch, font, size) > width) {
      out.push(current);
      current = '';
    }
    current += ch;
  }
  if (current) out.push(current);
  return out;
}

function cut(value: string, font: Standard14FontName, size: number, width: number): string {
  let text = winAnsi(value);
  if (measureText(text, font, size) <= width) return text;
  while (text.length > 1 && measureText(`${text}…`, font, size) > width) text = text.slice(0, -1);
  return `${text}…`;
}

const orDash = (v: string | null | undefined) => (v === null || v === undefined || v === '' ? '-' : v);

/**
 * Appends the audit certificate: the envelope, the hash of the original document, every recipient
 * with what they did and from where, and the event log, over as many A4 pages as it takes.
 * Answers the number of pages added.
 */
export function appendCertificate(pdf: PDF, data: CertificateData): number {
  const w = new Writer(pdf);
  w.text('Certificate of completion', { font: 'Helvetica-Bold', size: 20 });
  w.gap(2);
  w.text('Electronic signature audit trail. The document above this page is sealed with a digital signature.', { size: 9, color: GREY });
  // A free test-mode send must never pass for a paid, binding one: say so where a reader looks first.
  if (data.test) {
    w.gap(6);
    w.text('TEST - this envelope was sent in test mode. It is not a binding signature.', { font: 'Helvetica-Bold', size: 13, color: RED });
  }
  w.gap(8);
  w.field('Envelope ID', data.envelopeId);
  w.field('Title', data.title ?? '(untitled)');
  w.field('Original SHA-256', data.documentSha256, { font: 'Courier', size: 8.5 });
  w.field('Completed at', data.completedAt);

  w.heading(`Recipients (${data.recipients.length})`);
  data.recipients.forEach((r, i) => {
    w.ensure(r.emailVerification ? 115 : 90);
    w.gap(i ? 6 : 0);
    w.text(`${i + 1}. ${r.name}`, { font: 'Helvetica-Bold', size: 10.5 });
    w.field('Email', r.email, { indent: 12 });
    w.field('Role', r.role, { indent: 12 });
    w.field('Status', r.status, { indent: 12 });
    w.field('Viewed at', orDash(r.viewedAt), { indent: 12 });
    w.field('Signed at', orDash(r.signedAt), { indent: 12 });
    // A gated recipient proved control of the address above before the document was shown to them.
    if (r.emailVerification) {
      w.field('Identity', r.emailVerification.verifiedAt ? 'Email verified by code' : 'Email verification required; not completed', { indent: 12 });
      w.field('Verified at', orDash(r.emailVerification.verifiedAt), { indent: 12 });
    }
    w.field('IP address', orDash(r.ip), { indent: 12 });
    w.field('User agent', orDash(r.userAgent), { indent: 12, size: 8.5 });
  });

  w.heading(`Event log (${data.events.length})`);
  const widths = [120, 125, 150, CONTENT_WIDTH - 395];
  w.row(['Time', 'Event', 'Recipient', 'IP address'], widths, { font: 'Helvetica-Bold', color: GREY });
  for (const e of data.events) w.row([e.at, e.event, orDash(e.recipientEmail), orDash(e.ip)], widths);

  // Footers last, when the page count is known.
  w.pages.forEach((page, i) => {
    const label = winAnsi(`${data.test ? 'TEST - ' : ''}Envelope ${data.envelopeId} - audit certificate, page ${i + 1} of ${w.pages.length}`);
    page.drawText(label, { x: MARGIN, y: MARGIN - 18, font: 'Helvetica', size: 7.5, color: data.test ? RED : GREY });
  });
  return w.pages.length;
}
