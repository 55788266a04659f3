/** What every server-rendered page needs: escaping, and the head of the document. */

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
export const escapeHtml = (text: string): string => text.replace(/[&<>"']/g, (c) => ESCAPES[c]);

export type PageHead = {
  title: string;
  /** URLs relative to the page, unescaped (this escapes them): stylesheets in order, modules to preload, the client module. */
  stylesheets: string[];
  modulepreload?: string[];
  script?: string;
  /** Pages that hold someone's link stay out of search indexes. */
  noindex?: boolean;
  /** The page's language and direction (English, left to right, unless given). */
  lang?: string;
  dir?: 'ltr' | 'rtl';
  /** Extra <meta name content> pairs (the dashboard's csrf-token), escaped here. */
  meta?: Record<string, string>;
};

/**
 * The document up to the end of <head>: no Referer from the page (its URL may hold a token), no favicon
 * request, and only files from our origin (the pages' CSPs allow nothing else).
 */
export function pageHead(o: PageHead): string {
  const lines = [
    '<!doctype html>',
    `<html lang="${escapeHtml(o.lang ?? 'en')}"${o.dir === 'rtl' ? ' dir="rtl"' : ''}>`,
    '<head>',
    '<meta charset="utf-8">',
    '<meta name="viewport" content="width=device-width, initial-scale=1">',
    '<meta name="referrer" content="no-referrer">',
    ...(o.noindex ? ['<meta name="robots" content="noindex, nofollow">'] : []),
    ...Object.entries(o.meta ?? {}).map(([name, content]) => `<meta name="${escapeHtml(name)}" content="${escapeHtml(content)}">`),
    `<title>${escapeHtml(o.title)}</title>`,
    '<link rel="icon" href="data:,">',
    ...o.stylesheets.map((href) => `<link rel="stylesheet" href="${escapeHtml(href)}">`),
    ...(o.modulepreload ?? []).map((href) => `<link rel="modulepreload" href="${escapeHtml(href)}">`),
    ...(o.script ? [`<script type="module" src="${escapeHtml(o.script)}"></script>`] : []),
    '</head>',
  ];
  return lines.join('\n');
}
