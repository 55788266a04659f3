import { rgb, type PDF, type PDFPage } from '@libpdf/core';
import { drawRuns, type FontRole } from './fonts.js';
import { clean, lineWidth, visualLine } from './text.js';
import type { CertificateAttachment, CertificateData } from './types.js';
import { t } from '../i18n/catalogue.js';
import { DEFAULT_LOCALE } from '../i18n/locales.js';

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
      this.draw(this.page, line, MARGIN + indent + labelWidth, this.y + size * 0.25, size, role, style.color);
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

const UTC_TIME = new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZone: 'UTC' });
const zoneFormats = new Map<string, Intl.DateTimeFormat>();

/** A time zone's formatter, or undefined for a name this runtime does not know (the route checked it; a later runtime might not). */
function zoneFormat(timeZone: string): Intl.DateTimeFormat | undefined {
  if (!zoneFormats.has(timeZone)) {
    try {
      zoneFormats.set(timeZone, new Intl.DateTimeFormat('en-GB', { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23', timeZone, timeZoneName: 'short' }));
    } catch {
      return undefined;
    }
  }
  return zoneFormats.get(timeZone);
}

/** "27 Nov 2026, 05:48:18 UTC": every time on the certificate says which zone it is in. */
export function utcTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${UTC_TIME.format(d)} UTC`;
}

/** The UTC time and, where the recipient gave a time zone, the same moment in theirs, named. */
export function readableTime(iso: string, timeZone?: string | null): string {
  const utc = utcTime(iso);
  const zone = timeZone ? zoneFormat(timeZone) : undefined;
  return zone ? `${utc} (${zone.format(new Date(iso))}, ${timeZone})` : utc;
}

const ACTION_LABELS: Record<string, string> = {
  VIEWED: 'Viewed',
  RECIPIENT_VERIFIED: 'Email verified',
  CONSENTED: 'Consented',
  SIGNED: 'Signed',
  APPROVED: 'Approved',
  REJECTED: 'Declined',
};

/** How the seal was made, in words: its level, and whose clock dates it. */
function sealLine(data: CertificateData): string | null {
  if (!data.sealLevel) return null;
  const timestamped = data.sealLevel !== 'B-B' && data.tsaName;
  return timestamped
    ? `PAdES ${data.sealLevel}; its time is an RFC 3161 timestamp by ${data.tsaName} (the time is in the signature, shown by PDF readers and /verify-document)`
    : `PAdES ${data.sealLevel}; no trusted timestamp: the signing time is this server's clock`;
}

type Recipient = CertificateData['recipients'][number];

/** Roughly how tall a recipient's block is, so a block that fits on a page is not split across two. */
const blockHeight = (r: Recipient) => 100 + (r.emailVerification ? 14 : 0) + (r.timeZone ? 14 : 0) + (r.actions?.length ?? 2) * 30;

function recipientBlock(w: Writer, r: Recipient, i: number): void {
  w.ensure(Math.min(blockHeight(r), PAGE.height - 2 * MARGIN - FOOTER));
  w.gap(i ? 8 : 0);
  w.text(`${i + 1}. ${r.name}`, { role: 'bold', size: 10.5 });
  w.field('Email', r.email, { indent: 12 });
  w.field('Role', `${r.role}; ${r.status}`, { indent: 12 });
  if (r.timeZone) w.field('Time zone', `${r.timeZone} (their times below are also given in it)`, { indent: 12 });
  // A gated recipient proved control of the address above before the document was shown to them.
  if (r.emailVerification) {
    w.field('Verification', r.emailVerification.verifiedAt ? `Email code sent to this address, confirmed ${readableTime(r.emailVerification.verifiedAt, r.timeZone)}` : 'Email code required; not confirmed', { indent: 12 });
  }
  if (r.consent) w.field('Consent', `Agreed to electronic records and signatures ${readableTime(r.consent.at, r.timeZone)}${r.consent.textSha256 ? `; text SHA-256 ${r.consent.textSha256}` : ''}`, { indent: 12 });
  else if (r.actions) w.field('Consent', r.role === 'VIEWER' || r.role === 'CC' ? 'Not asked: nothing to sign' : r.status === 'REJECTED' ? 'Not given (declining needs none)' : 'Not given', { indent: 12 });
  if (!r.actions) {
    // Data from before actions were listed: the last action's address only.
    w.field('Viewed at', r.viewedAt ? readableTime(r.viewedAt, r.timeZone) : '-', { indent: 12 });
    w.field('Signed at', r.signedAt ? readableTime(r.signedAt, r.timeZone) : '-', { indent: 12 });
    w.field('IP address', orDash(r.ip), { indent: 12 });
    w.field('User agent', orDash(r.userAgent), { indent: 12, size: 8.5 });
    return;
  }
  if (r.actions.length === 0) w.field('Actions', 'None', { indent: 12 });
  for (const a of r.actions) {
    w.field(ACTION_LABELS[a.event] ?? a.event, readableTime(a.at, r.timeZone), { indent: 12 });
    w.field('', `IP ${orDash(a.ip)}; ${orDash(a.userAgent)}`, { indent: 12, size: 8, color: GREY });
  }
}

/**
 * Appends the audit certificate: the envelope, who sent it, the document's hash, how it is sealed,
 * the consent text, every recipient with what they did, when and from where, and the event log, over
 * as many A4 pages as it takes. Answers the number of pages added.
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
  if (data.senderName !== undefined) w.field('Sent by', orDash(data.senderName));
  w.field('Completed at', utcTime(data.completedAt));
  w.field('Original SHA-256', data.documentSha256, { role: 'mono', size: 8.5 });
  // A file cannot hold its own hash: the sealed file's is computed by whoever checks it.
  w.field('Sealed file', 'Its SHA-256 cannot be printed inside it: /verify-document computes it and names this envelope when the file is unchanged.');
  const seal = sealLine(data);
  if (seal) w.field('Seal', seal);
  if (data.verificationUrl) {
    w.gap(4);
    w.link(`Verify this document at ${data.verificationUrl}`, data.verificationUrl);
  }

  w.heading(`Recipients (${data.recipients.length})`);
  data.recipients.forEach((r, i) => recipientBlock(w, r, i));

  if (data.consent) {
    w.heading('Consent to electronic records and signatures');
    w.text('Each recipient who signed or approved was shown this text and agreed to it first.', { size: 9, color: GREY });
    w.field('Text SHA-256', data.consent.sha256, { role: 'mono', size: 8.5 });
    w.gap(4);
    for (const para of data.consent.text.split(/\n\s*\n/)) {
      w.text(para.replace(/\s+/g, ' ').trim(), { size: 9 });
      w.gap(3);
    }
  }

  if (data.handovers?.length) {
    // Whoever signed in a place may not be whom the sender first named: each hand-over, who decided it, and when.
    w.heading(`Hand-overs (${data.handovers.length})`);
    data.handovers.forEach((h, i) => {
      w.ensure(44);
      w.text(`${i + 1}. ${h.by === 'sender' ? 'Reassigned by the sender' : 'Delegated by the recipient'}, ${utcTime(h.at)}`, { role: 'bold', size: 9.5 });
      w.field('From', `${h.from.name} <${h.from.email}>`, { indent: 12 });
      w.field('To', `${h.to.name} <${h.to.email}>`, { indent: 12 });
      if (h.reason) w.field('Reason', h.reason, { indent: 12 });
    });
  }
  if (data.attachments?.length) attachmentsBlock(w, data.attachments);

  w.heading(`Event log (${data.events.length}, times in UTC)`);
  const widths = [130, 125, 150, CONTENT_WIDTH - 405];
  w.row(['Time (UTC)', 'Event', 'Recipient', 'IP address'], widths, { role: 'bold', color: GREY });
  for (const e of data.events) w.row([utcTime(e.at).replace(/ UTC$/, ''), e.event, orDash(e.recipientEmail), orDash(e.ip)], widths);

  // Footers last, when the page count is known.
  w.pages.forEach((page, i) => {
    const label = `${data.test ? 'TEST - ' : ''}Envelope ${data.envelopeId} - audit certificate, page ${i + 1} of ${w.pages.length}`;
    w.draw(page, label, MARGIN, MARGIN - 18, 7.5, 'regular', data.test ? RED : GREY);
  });
  return w.pages.length;
}

/**
 * The files signers attached (FILE fields): each with who attached it, when, its type and size, and
 * its SHA-256, which is how a copy of the file is matched to this certificate. Labels from the
 * signing-attachments catalogue (English, as the rest of this page is today).
 */
function attachmentsBlock(w: Writer, attachments: CertificateAttachment[]): void {
  const m = (key: string, values?: Record<string, string | number>) => t(DEFAULT_LOCALE, `signing-attachments.${key}`, values);
  w.heading(m('certificateHeading', { count: attachments.length }));
  w.text(m('certificateIntro'), { size: 9, color: GREY });
  for (const a of attachments) {
    w.gap(4);
    w.field(m('certificateFile'), a.name, { role: 'bold' });
    w.field(m('certificateBy'), `${a.recipientEmail}, ${utcTime(a.uploadedAt)}`);
    w.field(m('certificateType'), `${a.contentType}, ${a.size} bytes`);
    w.field('SHA-256', a.sha256, { role: 'mono', size: 8.5 });
  }
}
