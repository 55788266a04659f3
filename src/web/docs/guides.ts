import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Marked, type Tokens } from 'marked';
import { escapeHtml } from '../html.js';

/**
 * The guides in docs/*.md, rendered once at start into HTML. Which guides exist is decided here, from
 * the directory listing: a request only ever picks a name out of this map, never a path.
 */

/** The repository's docs/ folder: three levels up from src/web/docs/ under tsx and from dist/web/docs/ once built. */
export const DOCS_DIR = fileURLToPath(new URL('../../../docs/', import.meta.url));

export type Guide = { name: string; title: string; html: string };
export type DocFile = { type: string; body: Buffer };

const IMAGE_TYPES: Record<string, string> = { '.svg': 'image/svg+xml', '.png': 'image/png', '.jpg': 'image/jpeg', '.jpeg': 'image/jpeg', '.gif': 'image/gif', '.webp': 'image/webp' };
const GUIDE_NAME = /^[a-z0-9][a-z0-9-]*$/;
/** Links a guide may carry: the web, mail, anchors and relative paths; never `javascript:` or `data:`. */
const SAFE_HREF = /^(https?:|mailto:|#|\/|\.{0,2}\/?[\w.-])/i;

/** `other.md#x` (or `./other.md`) → the other guide's page, relative to /docs/guides/<name>. */
function rewriteHref(href: string, names: ReadonlySet<string>): string {
  const m = /^(?:\.\/)?([a-z0-9-]+)\.md(#.*)?$/i.exec(href);
  if (m && names.has(m[1])) return `${m[1]}${m[2] ?? ''}`;
  return SAFE_HREF.test(href) && !/^\s*(javascript|data|vbscript):/i.test(href) ? href : '#';
}

function renderer(names: ReadonlySet<string>, images: ReadonlySet<string>): Marked {
  const marked = new Marked({ gfm: true });
  marked.use({
    walkTokens(token) {
      if (token.type === 'link') (token as Tokens.Link).href = rewriteHref((token as Tokens.Link).href, names);
      if (token.type === 'image') {
        const img = token as Tokens.Image;
        const local = img.href.replace(/^\.\//, '');
        img.href = images.has(local) ? `files/${local}` : /^https?:/i.test(img.href) ? img.href : '#';
      }
    },
    renderer: {
      // Raw HTML in a guide is shown as text: the pages' CSP and our escaping stay the only rules.
      html: ({ text }) => escapeHtml(text),
      // A code block scrolls sideways on a phone: focusable, so a keyboard can scroll it too.
      code({ text, lang }) {
        const cls = lang ? ` class="language-${escapeHtml(lang.split(/\s/)[0])}"` : '';
        return `<pre tabindex="0"><code${cls}>${escapeHtml(text)}</code></pre>\n`;
      },
      heading({ tokens, depth, text }) {
        const id = text.toLowerCase().replace(/<[^>]*>/g, '').replace(/[^\w\s-]/g, '').trim().replace(/\s+/g, '-');
        return `<h${depth} id="${escapeHtml(id)}">${this.parser.parseInline(tokens)}</h${depth}>\n`;
      },
    },
  });
  return marked;
}

/** The image files under docs/ (and its subfolders), by path relative to docs/. */
function listImages(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name;
    if (entry.isDirectory() && !entry.name.startsWith('.')) out.push(...listImages(dir, rel));
    else if (entry.isFile() && IMAGE_TYPES[path.extname(entry.name).toLowerCase()]) out.push(rel);
  }
  return out;
}

export type Guides = { list: Guide[]; get(name: string): Guide | undefined; file(rel: string): DocFile | undefined };

export function loadGuides(dir: string = DOCS_DIR): Guides {
  let entries: string[] = [];
  try {
    entries = readdirSync(dir).filter((f) => f.endsWith('.md') && GUIDE_NAME.test(f.slice(0, -3))).sort();
  } catch {
    // A deployment without docs/ still serves the reference; the guides index says there are none.
  }
  const names = new Set(entries.map((f) => f.slice(0, -3)));
  const imagePaths = entries.length ? listImages(dir) : [];
  const files = new Map(imagePaths.map((rel) => [rel, { type: IMAGE_TYPES[path.extname(rel).toLowerCase()], body: readFileSync(path.join(dir, rel)) }]));
  const marked = renderer(names, new Set(imagePaths));
  const list = entries.map((f): Guide => {
    const name = f.slice(0, -3);
    const source = readFileSync(path.join(dir, f), 'utf8');
    const title = /^#\s+(.+)$/m.exec(source)?.[1].trim() ?? name.replace(/-/g, ' ');
    return { name, title, html: marked.parse(source, { async: false }) };
  });
  const byName = new Map(list.map((g) => [g.name, g]));
  return { list, get: (name) => byName.get(name), file: (rel) => files.get(rel) };
}
