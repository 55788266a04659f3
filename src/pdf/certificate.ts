import { rgb, type PDF, type PDFPage } from '@libpdf/core';
import { t as message, type MessageValues } from '../i18n/catalogue.js';
import { DEFAULT_LOCALE, textDirection, type Locale } from '../i18n/locales.js';
import { drawRuns, widthOf, type FontRole } from './fonts.js';
import { clean, lineWidth, visualLine } from './text.js';
import type { CertificateAttachment, CertificateData } from './types.js';

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
 * Writes flowing lines top to bottom, starting a new page when the next line does not fit. In a
 * left-to-right language lines start at the left margin, and a right-to-left name or value inside one
 * is drawn in its own order by visualLine; in Arabic (`rtl`) the whole layout is mirrored: lines start
 * at the right margin, labels stand right of their values, and each line's base direction is its own.
 */
class Writer {
  readonly pages: PDFPage[] = [];
  private page!: PDFPage;
  private y = 0;

  private readonly pdf: PDF;
  private readonly rtl: boolean;
  constructor(
    pdf: PDF,
    rtl = false,
  ) {
    this.pdf = pdf;
    this.rtl = rtl;
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

  /** Draws a line whose start is `x` from the left edge (from the right edge when mirrored); answers its width. */
  draw(page: PDFPage, logical: string, x: number, y: number, size: number, role: FontRole, color = DARK): number {
    const visual = visualLine(logical, role, this.rtl ? 'auto' : 'ltr').text;
    const width = widthOf(visual, role, size);
    drawRuns(this.pdf, page, visual, { x: this.mirror(x, width), y, size, role, color });
    return width;
  }

  /** The left edge of something `width` wide that starts `x` from the start edge. */
  mirror(x: number, width: number): number {
    return this.rtl ? PAGE.width - x - width : x;
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
    for (const b of boxes) b.page.addLinkAnnotation({ rect: { x: this.mirror(b.x, b.width), y: b.y, width: b.width, height: b.height }, uri, borderWidth: 0 });
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

const TIME_OPTIONS: Intl.DateTimeFormatOptions = { day: 'numeric', month: 'short', year: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' };
const timeFormats = new Map<string, Intl.DateTimeFormat | undefined>();

/** A locale's formatter in a time zone, or undefined for a zone this runtime does not know (the route checked it; a later runtime might not). */
function timeFormat(locale: Locale, timeZone: string, named = false): Intl.DateTimeFormat | undefined {
  const id = `${locale}\0${timeZone}\0${named}`;
  if (!timeFormats.has(id)) {
    try {
      // English keeps en-GB's day-month-year, as it always had.
      timeFormats.set(id, new Intl.DateTimeFormat(locale === 'en' ? 'en-GB' : locale, { ...TIME_OPTIONS, timeZone, ...(named ? { timeZoneName: 'short' } : {}) }));
    } catch {
      timeFormats.set(id, undefined);
    }
  }
  return timeFormats.get(id);
}

/** "27 Nov 2026, 05:48:18 UTC": every time on the certificate says which zone it is in. */
export function utcTime(iso: string, locale: Locale = DEFAULT_LOCALE): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : message(locale, 'certificate.utc', { time: timeFormat(locale, 'UTC')!.format(d) });
}

/** The UTC time and, where the recipient gave a time zone, the same moment in theirs, named. */
export function readableTime(iso: string, timeZone?: string | null, locale: Locale = DEFAULT_LOCALE): string {
  const utc = utcTime(iso, locale);
  const zone = timeZone ? timeFormat(locale, timeZone, true) : undefined;
  return zone ? message(locale, 'certificate.inZone', { utc, local: zone.format(new Date(iso)), zone: timeZone }) : utc;
}

/** How the seal was made, in words: its level, and whose clock dates it. */
function sealLine(data: CertificateData, t: Say): string | null {
  if (!data.sealLevel) return null;
  const timestamped = data.sealLevel !== 'B-B' && data.tsaName;
  return timestamped ? t('sealTimestamped', { level: data.sealLevel, tsa: data.tsaName }) : t('sealClock', { level: data.sealLevel });
}

/** The certificate's messages in its one language. */
type Say = (name: string, values?: MessageValues) => string;

type Recipient = CertificateData['recipients'][number];

/** Roughly how tall a recipient's block is, so a block that fits on a page is not split across two. */
const blockHeight = (r: Recipient) => 100 + (r.emailVerification ? 14 : 0) + (r.timeZone ? 14 : 0) + (r.actions?.length ?? 2) * 30;

function recipientBlock(w: Writer, r: Recipient, i: number, t: Say, locale: Locale): void {
  const time = (iso: string) => readableTime(iso, r.timeZone, locale);
  w.ensure(Math.min(blockHeight(r), PAGE.height - 2 * MARGIN - FOOTER));
  w.gap(i ? 8 : 0);
  w.text(`${i + 1}. ${r.name}`, { role: 'bold', size: 10.5 });
  w.field(t('email'), r.email, { indent: 12 });
  w.field(t('role'), t('roleStatus', { role: r.role, status: r.status }), { indent: 12 });
  if (r.timeZone) w.field(t('timeZone'), t('timeZoneValue', { zone: r.timeZone }), { indent: 12 });
  // A gated recipient proved control of the address above before the document was shown to them.
  if (r.emailVerification) {
    w.field(t('verification'), r.emailVerification.verifiedAt ? t('verificationConfirmed', { at: time(r.emailVerification.verifiedAt) }) : t('verificationMissing'), { indent: 12 });
  }
  if (r.consent) w.field(t('consent'), r.consent.textSha256 ? t('consentGivenSha', { at: time(r.consent.at), sha: r.consent.textSha256 }) : t('consentGiven', { at: time(r.consent.at) }), { indent: 12 });
  else if (r.actions) w.field(t('consent'), t(r.role === 'VIEWER' || r.role === 'CC' ? 'consentNotAsked' : r.status === 'REJECTED' ? 'consentNotGivenDeclined' : 'consentNotGiven'), { indent: 12 });
  if (!r.actions) {
    // Data from before actions were listed: the last action's address only.
    w.field(t('viewedAt'), r.viewedAt ? time(r.viewedAt) : '-', { indent: 12 });
    w.field(t('signedAt'), r.signedAt ? time(r.signedAt) : '-', { indent: 12 });
    w.field(t('ipAddress'), orDash(r.ip), { indent: 12 });
    w.field(t('userAgent'), orDash(r.userAgent), { indent: 12, size: 8.5 });
    return;
  }
  if (r.actions.length === 0) w.field(t('actions'), t('none'), { indent: 12 });
  for (const a of r.actions) {
    w.field(t('action', { event: a.event }), time(a.at), { indent: 12 });
    w.field('', t('actionFrom', { ip: orDash(a.ip), userAgent: orDash(a.userAgent) }), { indent: 12, size: 8, color: GREY });
  }
}

/**
 * Appends the audit certificate: the envelope, who sent it, the document's hash, how it is sealed,
 * the consent text, every recipient with what they did, when and from where, and the event log, over
 * as many A4 pages as it takes. Answers the number of pages added.
 */
export function appendCertificate(pdf: PDF, data: CertificateData): number {
  // One language per certificate: the account's default when the envelope was created (English without one).
  const locale = data.locale ?? DEFAULT_LOCALE;
  const t: Say = (name, values) => message(locale, `certificate.${name}`, values);
  const w = new Writer(pdf, textDirection(locale) === 'rtl');
  w.text(t('title'), { role: 'bold', size: 20 });
  w.gap(2);
  w.text(t('subtitle'), { size: 9, color: GREY });
  // A free test-mode send must never pass for a paid, binding one: say so where a reader looks first.
  if (data.test) {
    w.gap(6);
    w.text(t('testBanner'), { role: 'bold', size: 13, color: RED });
  }
  w.gap(8);
  w.field(t('envelopeId'), data.envelopeId);
  w.field(t('titleLabel'), data.title ?? t('untitled'));
  if (data.senderName !== undefined) w.field(t('sentBy'), orDash(data.senderName));
  w.field(t('completedAt'), utcTime(data.completedAt, locale));
  w.field(t('originalSha'), data.documentSha256, { role: 'mono', size: 8.5 });
  // A file cannot hold its own hash: the sealed file's is computed by whoever checks it.
  w.field(t('sealedFile'), t('sealedFileText'));
  const seal = sealLine(data, t);
  if (seal) w.field(t('seal'), seal);
  if (data.verificationUrl) {
    w.gap(4);
    w.link(t('verifyAt', { url: data.verificationUrl }), data.verificationUrl);
  }

  w.heading(t('recipients', { count: data.recipients.length }));
  data.recipients.forEach((r, i) => recipientBlock(w, r, i, t, locale));

  if (data.consent) {
    w.heading(t('consentHeading'));
    w.text(t(data.consent.builtIn ? 'consentNoteBuiltIn' : 'consentNote'), { size: 9, color: GREY });
    w.field(t('textSha'), data.consent.sha256, { role: 'mono', size: 8.5 });
    w.gap(4);
    for (const para of data.consent.text.split(/\n\s*\n/)) {
      w.text(para.replace(/\s+/g, ' ').trim(), { size: 9 });
      w.gap(3);
    }
  }

  if (data.handovers?.length) {
    // Whoever signed in a place may not be whom the sender first named: each hand-over, who decided it, and when.
    w.heading(t('handovers', { count: data.handovers.length }));
    data.handovers.forEach((h, i) => {
      w.ensure(44);
      w.text(t('handover', { n: i + 1, by: h.by, time: utcTime(h.at, locale) }), { role: 'bold', size: 9.5 });
      w.field(t('handoverFrom'), `${h.from.name} <${h.from.email}>`, { indent: 12 });
      w.field(t('handoverTo'), `${h.to.name} <${h.to.email}>`, { indent: 12 });
      if (h.reason) w.field(t('handoverReason'), h.reason, { indent: 12 });
    });
  }
  if (data.attachments?.length) attachmentsBlock(w, data.attachments, locale);

  w.heading(t('eventLog', { count: data.events.length }));
  const widths = [130, 125, 150, CONTENT_WIDTH - 405];
  w.row([t('colTime'), t('colEvent'), t('colRecipient'), t('colIp')], widths, { role: 'bold', color: GREY });
  // Event names are the machine codes the API and webhooks use, the same in every language.
  const bare = (iso: string) => (Number.isNaN(new Date(iso).getTime()) ? iso : timeFormat(locale, 'UTC')!.format(new Date(iso)));
  for (const e of data.events) w.row([bare(e.at), e.event, orDash(e.recipientEmail), orDash(e.ip)], widths);

  // Footers last, when the page count is known.
  w.pages.forEach((page, i) => {
    const label = t('footer', { test: data.test ? 'yes' : 'no', id: data.envelopeId, page: i + 1, pages: w.pages.length });
    w.draw(page, label, MARGIN, MARGIN - 18, 7.5, 'regular', data.test ? RED : GREY);
  });
  return w.pages.length;
}

/**
 * The files signers attached (FILE fields): each with who attached it, when, its type and size, and
 * its SHA-256, which is how a copy of the file is matched to this certificate. Labels from the
 * signing-attachments catalogue, in the certificate's language.
 */
function attachmentsBlock(w: Writer, attachments: CertificateAttachment[], locale: Locale): void {
  const m = (key: string, values?: Record<string, string | number>) => message(locale, `signing-attachments.${key}`, values);
  w.heading(m('certificateHeading', { count: attachments.length }));
  w.text(m('certificateIntro'), { size: 9, color: GREY });
  for (const a of attachments) {
    w.gap(4);
    w.field(m('certificateFile'), a.name, { role: 'bold' });
    w.field(m('certificateBy'), `${a.recipientEmail}, ${utcTime(a.uploadedAt, locale)}`);
    w.field(m('certificateType'), `${a.contentType}, ${a.size} bytes`);
    w.field('SHA-256', a.sha256, { role: 'mono', size: 8.5 });
  }
}
