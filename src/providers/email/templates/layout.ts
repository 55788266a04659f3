/**
 * The one look of every email Signet sends: a plain-text part and an HTML twin built from the same
 * content, so both always say the same thing and both carry the link.
 *
 * The HTML is written for mail clients, not browsers: tables for layout, inline styles only (Gmail and
 * Outlook strip <style> blocks), no images, no web fonts, no tracking pixels and no rewritten links.
 * Every value that comes from a customer or a recipient (names, titles, messages, reasons) goes through
 * escapeHtml: a title is text, never markup.
 */

import { t } from '../../../i18n/catalogue.js';
import { DEFAULT_LOCALE, textDirection, type Locale } from '../../../i18n/locales.js';

export type RenderedEmail = { subject: string; text: string; html: string };

export type EmailTone = 'action' | 'success' | 'danger';

export type EmailContent = {
  subject: string;
  /** The inbox preview line: hidden in the HTML body, so clients show it next to the subject. */
  preview: string;
  /** A short label above the heading ("Signature requested"). HTML only. */
  eyebrow: string;
  tone?: EmailTone;
  /** The big line of the HTML (a document's title, "Your verification code"). HTML only: the text part starts at the greeting. */
  heading: string;
  greeting: string;
  paragraphs: string[];
  /** Someone's own words (the sender's message, a decline reason), set apart and quoted. */
  quote?: { label: string; text: string };
  /** A one-time code, shown large in the HTML; one line in the text part (`label value`). */
  code?: { label: string; value: string };
  /** The single action. In the text part: `label:` then the URL, or the URL alone when the paragraph before introduces it. */
  button?: { label: string; url: string; bareInText?: boolean };
  /** Facts under the button ("Sign by", "From"). */
  details?: [label: string, value: string][];
  /** Small print under the action (the link is personal, what to do if unexpected). */
  notes?: string[];
  /** The last line of the message itself ("— Signet"). */
  signoff?: string;
  /** Below the card: who sent this and why it reached you. */
  footer: string[];
  /** The sending account's accent for an action email's button and eyebrow (#rrggbb, at least 4.5:1 with white). */
  accent?: string;
  /** The sending account's logo at the top of the HTML part (an absolute https/http URL; the text part has none). */
  logo?: { url: string; alt: string };
  /** Test mode: said in the subject and at the top of both parts. */
  test?: boolean;
  /** The reader's language: the layout's own words, `lang` and `dir` on the HTML. English when unset. */
  locale?: Locale;
};

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

/** Escaped, with the line breaks the person typed kept. */
const multiline = (text: string) => escapeHtml(text).replace(/\r?\n/g, '<br>');

export const TEST_SUBJECT_PREFIX = '[TEST] ';
/** "Label:" with the language's own colon ("Libellé :", "标签："). */
const labelled = (c: EmailContent, label: string) => t(c.locale ?? DEFAULT_LOCALE, 'email.label', { label });
const testNotice = (c: EmailContent) => t(c.locale ?? DEFAULT_LOCALE, 'email.testNotice');

const FONT = "-apple-system, BlinkMacSystemFont, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif";
const MONO = "ui-monospace, SFMono-Regular, Menlo, Consolas, 'Liberation Mono', monospace";
// Colours meet WCAG AA contrast on their backgrounds (body text 12:1, muted 7:1, white on the accent 6.7:1).
const C = { page: '#f3f4f6', card: '#ffffff', border: '#e5e7eb', text: '#1f2937', muted: '#4b5563', accent: '#0b5cad', quoteBg: '#f9fafb' };
const TONES: Record<EmailTone, string> = { action: C.accent, success: '#067647', danger: '#b42318' };

/** Removes line breaks from a value bound for a subject line, and shortens it to `max` characters. */
export function oneLine(text: string, max = 200): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1).trimEnd()}…` : flat;
}

export function renderEmail(c: EmailContent): RenderedEmail {
  const subject = oneLine(`${c.test ? TEST_SUBJECT_PREFIX : ''}${c.subject}`, 250);
  return { subject, text: renderText(c), html: renderHtml(c, subject) };
}

function renderText(c: EmailContent): string {
  const blocks: string[] = [];
  if (c.test) blocks.push(`[TEST] ${testNotice(c)}`);
  blocks.push(c.greeting, ...c.paragraphs);
  if (c.quote) blocks.push(`${labelled(c, c.quote.label)}\n${c.quote.text.split(/\r?\n/).map((l) => `> ${l}`).join('\n')}`);
  if (c.code) blocks.push(`${c.code.label} ${c.code.value}`);
  if (c.details?.length) blocks.push(c.details.map(([k, v]) => `${labelled(c, k)} ${v}`).join('\n'));
  if (c.button) blocks.push(c.button.bareInText ? c.button.url : `${labelled(c, c.button.label)}\n${c.button.url}`);
  blocks.push(...(c.notes ?? []));
  if (c.signoff) blocks.push(c.signoff);
  // "-- " is the signature separator mail clients recognise and fold away.
  blocks.push(`-- \n${c.footer.join('\n')}`);
  return `${blocks.join('\n\n')}\n`;
}

const p = (html: string, style = '') => `<p style="margin:0 0 16px;font-size:16px;line-height:24px;color:${C.text};${style}">${html}</p>`;

function renderHtml(c: EmailContent, subject: string): string {
  const locale = c.locale ?? DEFAULT_LOCALE;
  // Right to left (Arabic): the quote's bar and the gaps beside labels move to the other side; English keeps its exact bytes.
  const rtl = textDirection(locale) === 'rtl';
  const side = rtl ? { start: 'right', end: 'left', quoteRadius: '6px 0 0 6px', labelPad: '4px 0 4px 16px' } : { start: 'left', end: 'right', quoteRadius: '0 6px 6px 0', labelPad: '4px 16px 4px 0' };
  // Only a well-formed colour reaches the style attribute; the account's was checked for contrast when set.
  const accent = c.accent && /^#[0-9a-f]{6}$/i.test(c.accent) ? c.accent : C.accent;
  const tone = (c.tone ?? 'action') === 'action' ? accent : TONES[c.tone ?? 'action'];
  const parts: string[] = [];
  // Only an absolute http(s) URL of ours reaches src: it is built from PUBLIC_URL and a checked file name.
  if (c.logo && /^https?:\/\/[^\s"'<>]+$/.test(c.logo.url)) {
    parts.push(`<img src="${escapeHtml(c.logo.url)}" alt="${escapeHtml(c.logo.alt)}" style="display:block;max-height:48px;max-width:240px;height:auto;margin:0 0 24px;border:0;">`);
  }
  if (c.test) {
    parts.push(
      `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="margin:0 0 24px;"><tr><td style="padding:12px 16px;background-color:#fef3c7;border:1px solid #f59e0b;border-radius:6px;font-size:14px;line-height:20px;color:#78350f;">` +
        `<strong style="letter-spacing:1px;">TEST</strong> &nbsp;${escapeHtml(testNotice(c))}</td></tr></table>`,
    );
  }
  parts.push(
    `<p style="margin:0 0 8px;font-size:13px;line-height:20px;font-weight:600;letter-spacing:0.5px;text-transform:uppercase;color:${tone};">${escapeHtml(c.eyebrow)}</p>`,
    `<h1 style="margin:0 0 24px;font-size:24px;line-height:32px;font-weight:700;color:#111827;word-break:break-word;">${escapeHtml(c.heading)}</h1>`,
    p(escapeHtml(c.greeting)),
    ...c.paragraphs.map((t) => p(multiline(t))),
  );
  if (c.quote) {
    parts.push(
      `<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="margin:0 0 24px;"><tr><td style="padding:12px 16px;background-color:${C.quoteBg};border-${side.start}:4px solid #d1d5db;border-radius:${side.quoteRadius};">` +
        `<p style="margin:0 0 4px;font-size:13px;line-height:20px;font-weight:600;color:${C.muted};">${escapeHtml(c.quote.label)}</p>` +
        `<p style="margin:0;font-size:16px;line-height:24px;color:${C.text};word-break:break-word;">${multiline(c.quote.text)}</p></td></tr></table>`,
    );
  }
  if (c.code) {
    parts.push(
      p(escapeHtml(labelled(c, c.code.label))),
      `<p style="margin:0 0 24px;padding:16px;background-color:${C.quoteBg};border:1px solid ${C.border};border-radius:6px;text-align:center;text-indent:8px;font-family:${MONO};font-size:32px;line-height:40px;font-weight:700;letter-spacing:8px;color:#111827;">${escapeHtml(c.code.value)}</p>`,
    );
  }
  if (c.details?.length) {
    const rows = c.details
      .map(
        ([k, v]) =>
          `<tr><td style="padding:${side.labelPad};font-size:14px;line-height:20px;color:${C.muted};white-space:nowrap;vertical-align:top;">${escapeHtml(k)}</td><td style="padding:4px 0;font-size:14px;line-height:20px;color:${C.text};word-break:break-word;">${escapeHtml(v)}</td></tr>`,
      )
      .join('');
    parts.push(`<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin:0 0 16px;">${rows}</table>`);
  }
  if (c.button) {
    const href = escapeHtml(c.button.url);
    parts.push(
      // A table cell with a background colour: the button survives clients that drop padding on links.
      `<table role="presentation" cellpadding="0" cellspacing="0" border="0" style="margin:8px 0 24px;"><tr><td bgcolor="${accent}" style="background-color:${accent};border-radius:6px;">` +
        `<a href="${href}" target="_blank" style="display:inline-block;padding:14px 28px;font-family:${FONT};font-size:16px;line-height:20px;font-weight:600;color:#ffffff;text-decoration:none;border-radius:6px;">${escapeHtml(c.button.label)}</a></td></tr></table>`,
    );
  }
  // The small print sits under a rule, apart from what the message asks.
  if (c.button || c.notes?.length) parts.push(`<div style="margin:8px 0 20px;border-top:1px solid ${C.border};font-size:1px;line-height:1px;">&nbsp;</div>`);
  if (c.button) {
    parts.push(
      p(`${escapeHtml(t(c.locale ?? DEFAULT_LOCALE, 'email.buttonFallback'))}<br><a href="${escapeHtml(c.button.url)}" style="color:${accent};word-break:break-all;">${escapeHtml(c.button.url)}</a>`, `font-size:14px;line-height:20px;color:${C.muted};`),
    );
  }
  for (const note of c.notes ?? []) parts.push(p(multiline(note), `font-size:14px;line-height:20px;color:${C.muted};`));
  if (c.signoff) parts.push(p(escapeHtml(c.signoff)));
  // The card's bottom padding is short: the last paragraph's margin makes up the rest.
  const body = parts.join('\n');

  const footer = c.footer.map((line) => `<p style="margin:0 0 8px;font-size:13px;line-height:20px;color:${C.muted};">${multiline(line)}</p>`).join('\n');
  return `<!doctype html>
<html lang="${locale}" dir="${textDirection(locale)}">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light">
<meta name="supported-color-schemes" content="light">
<title>${escapeHtml(subject)}</title>
</head>
<body${rtl ? ' dir="rtl"' : ''} style="margin:0;padding:0;background-color:${C.page};font-family:${FONT};-webkit-text-size-adjust:100%;">
<div style="display:none;max-height:0;overflow:hidden;mso-hide:all;font-size:1px;line-height:1px;color:${C.page};">${escapeHtml(c.preview)}</div>
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" bgcolor="${C.page}" style="background-color:${C.page};">
<tr><td align="center" style="padding:24px 12px;">
<table role="presentation" width="100%" cellpadding="0" cellspacing="0" border="0" style="max-width:560px;font-family:${FONT};">
<tr><td style="padding:0 4px 16px;font-size:18px;line-height:24px;font-weight:700;color:#111827;"><span style="display:inline-block;width:12px;height:12px;margin-${side.end}:8px;background-color:${C.accent};border-radius:3px;"></span>Signet</td></tr>
<tr><td bgcolor="${C.card}" style="padding:32px 24px 16px;background-color:${C.card};border:1px solid ${C.border};border-radius:8px;">
${body}
</td></tr>
<tr><td style="padding:20px 4px 0;">
${footer}
</td></tr>
</table>
</td></tr>
</table>
</body>
</html>
`;
}
