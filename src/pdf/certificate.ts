import { rgb, type PDF, type PDFPage } from '@libpdf/core';
import { drawRuns, type FontRole } from './fonts.js';
import { clean, lineWidth, visualLine } from './text.js';
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
const LINK = rgb(0.05, 0.25, 0.6);

type Style = { role?: FontRole; size?: number; color?: ReturnType<typeof rgb>; indent?: number };
type LineBox = { page: PDFPage; x: number; y: number; width: number; height: number };

/**
 * Writes flowing lines top to bottom, starting a new page when the next line does not fit. Lines
 * are laid out left to right (our labels are English); a right-to-left name or value inside one is
 * drawn in its own order by visualLine.
 */
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

  draw(page: PDFPage, logical: string, x: number, y: number, size: number, role: FontRole, color = DARK): number {
    return drawRuns(this.pdf, page, visualLine(logical, role).text, { x, y, size, role, color });
  }

  /** One paragraph, wrapped to the content width. Answers where each line went. */
  text(value: string, style: Style = {}): LineBox[] {
    const role = style.role ?? 'regular';
    const size = style.size ?? 9.5;
    const indent = style.indent ?? 0;
    const leading = size * 1.3;
    const boxes: LineBox[] = [];
    for (const line of wrap(value, role, size, CONTENT_WIDTH - indent)) {
      this.ensure(leading);
      this.y -= leading;
      const width = this.draw(this.page, line, MARGIN + indent, this.y + size * 0.25, size, role, style.color);
      boxes.push({ page: this.page, x: MARGIN + indent, y: this.y, width, height: leading });
    }
    return boxes;
  }

  /** "Label   value" with the value wrapped in its own column. */
  field(label: string, value: string, style: Style = {}): void {
    const size = style.size ?? 9.5;
    const labelWidth = 105;
    const indent = style.indent ?? 0;
    const role = style.role ?? 'regular';
    const lines = wrap(value, role, size, CONTENT_WIDTH - indent - labelWidth);
    const leading = size * 1.3;
    lines.forEach((line, i) => {
      this.ensure(leading);
      this.y -= leading;
      if (i === 0) this.draw(this.page, label, MARGIN + indent, this.y + size * 0.25, size, 'regular', GREY);
      this.draw(this.page, line, MARGIN + indent + labelWidth, this.y + size * 0.25, size, role);
    });
  }

  /** A table row: each cell cut to its column width. */
  row(cells: string[], widths: number[], style: Style = {}): void {
    const size = style.size ?? 8;
    const role = style.role ?? 'regular';
    const leading = size * 1.45;
    this.ensure(leading);
    this.y -= leading;
    let x = MARGIN;
    cells.forEach((cell, i) => {
      this.draw(this.page, cut(cell, role, size, widths[i] - 6), x, this.y + size * 0.3, size, role, style.color);
      x += widths[i];
    });
  }

  /** A paragraph that opens `uri` when clicked (http and https only). */
  link(value: string, uri: string, style: Style = {}): void {
    const boxes = this.text(value, { color: LINK, ...style });
    if (!/^https?:\/\//i.test(uri)) return;
    for (const b of boxes) b.page.addLinkAnnotation({ rect: { x: b.x, y: b.y, width: b.width, height: b.height }, uri, borderWidth: 0 });
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
    this.text(title, { role: 'bold', size: 12.5 });
    this.rule();
  }
}

/** Lines of at most `width` points, broken at spaces; a long unbroken token (a user agent, a hash) is split by width. */
function wrap(value: string, role: FontRole, size: number, width: number): string[] {
  const text = clean(value);
  if (!text.trim()) return [''];
  const lines: string[] = [];
  let current = '';
  for (const word of text.split(' ')) {
    const candidate = current ? `${current} ${word}` : word;
    if (current && lineWidth(candidate, role, size) > width) {
      lines.push(current);
      current = word;
    } else current = candidate;
  }
  lines.push(current);
  return lines.flatMap((line) => splitLong(line, role, size, width));
}

function splitLong(line: string, role: FontRole, size: number, width: number): string[] {
  if (lineWidth(line, role, size) <= width) return [line];
  const out: string[] = [];
  let current = '';
  for (const ch of line) {
    if (current && lineWidth(current + ch, role, size) > width) {
      out.push(current);
      current = '';
    }
    current += ch;
  }
  if (current) out.push(current);
  return out;
}

function cut(value: string, role: FontRole, size: number, width: number): string {
  let chars = [...clean(value)];
  if (lineWidth(chars.join(''), role, size) <= width) return chars.join('');
  while (chars.length > 1 && lineWidth(`${chars.join('')}…`, role, size) > width) chars = chars.slice(0, -1);
  return `${chars.join('')}…`;
}

const orDash = (v: string | null | undefined) => (v === null || v === undefined || v === '' ? '-' : v);

/**
 * Appends the audit certificate: the envelope, the hash of the original document, every recipient
 * with what they did and from where, and the event log, over as many A4 pages as it takes.
 * Answers the number of pages added.
 */
export function appendCertificate(pdf: PDF, data: CertificateData): number {
  const w = new Writer(pdf);
  w.text('Certificate of completion', { role: 'bold', size: 20 });
  w.gap(2);
  w.text('Electronic signature audit trail. The document above this page is sealed with a digital signature.', { size: 9, color: GREY });
  // A free test-mode send must never pass for a paid, binding one: say so where a reader looks first.
  if (data.test) {
    w.gap(6);
    w.text('TEST - this envelope was sent in test mode. It is not a binding signature.', { role: 'bold', size: 13, color: RED });
  }
  w.gap(8);
  w.field('Envelope ID', data.envelopeId);
  w.field('Title', data.title ?? '(untitled)');
  w.field('Original SHA-256', data.documentSha256, { role: 'mono', size: 8.5 });
  w.field('Completed at', data.completedAt);
  if (data.verificationUrl) {
    w.gap(4);
    w.link(`Verify this document at ${data.verificationUrl}`, data.verificationUrl);
  }

  w.heading(`Recipients (${data.recipients.length})`);
  data.recipients.forEach((r, i) => {
    // The whole block on one page: name, eight fields and a user agent that may take two lines.
    w.ensure(r.emailVerification ? 160 : 135);
    w.gap(i ? 6 : 0);
    w.text(`${i + 1}. ${r.name}`, { role: 'bold', size: 10.5 });
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
  w.row(['Time', 'Event', 'Recipient', 'IP address'], widths, { role: 'bold', color: GREY });
  for (const e of data.events) w.row([e.at, e.event, orDash(e.recipientEmail), orDash(e.ip)], widths);

  // Footers last, when the page count is known.
  w.pages.forEach((page, i) => {
    const label = `${data.test ? 'TEST - ' : ''}Envelope ${data.envelopeId} - audit certificate, page ${i + 1} of ${w.pages.length}`;
    w.draw(page, label, MARGIN, MARGIN - 18, 7.5, 'regular', data.test ? RED : GREY);
  });
  return w.pages.length;
}
