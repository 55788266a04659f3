import { z } from 'zod';

export const ALLOWED_ORIGINS_MAX = 10;

/**
 * An origin that may frame embed links: https, or http on a loopback host (a developer's machine).
 * Returned as the browser spells it (`URL.origin`), which is what `frame-ancestors` and a
 * postMessage targetOrigin compare against; a path, query, credentials or wildcard is refused, since
 * the CSP would read a path as a prefix and `*` as anyone.
 */
export function parseOrigin(input: string): { origin: string } | { error: string } {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    return { error: `${input} is not a URL; give an origin such as https://app.example.com` };
  }
  const loopback = ['localhost', '127.0.0.1', '[::1]'].includes(url.hostname);
  if (url.protocol !== 'https:' && !(url.protocol === 'http:' && loopback)) return { error: `${input}: an origin must be https (http only for localhost)` };
  if (url.username || url.password || url.search || url.hash || (url.pathname !== '/' && url.pathname !== '')) {
    return { error: `${input}: give only scheme, host and port, e.g. ${url.origin}` };
  }
  if (input.includes('*')) return { error: `${input}: wildcards are not allowed; list each origin` };
  return { origin: url.origin };
}

export const ZAllowedOrigins = z
  .array(z.string().max(300))
  .max(ALLOWED_ORIGINS_MAX, `at most ${ALLOWED_ORIGINS_MAX} origins`)
  .transform((list, ctx) => {
    const out: string[] = [];
    list.forEach((item, i) => {
      const parsed = parseOrigin(item.trim());
      if ('error' in parsed) ctx.addIssue({ code: 'custom', message: parsed.error, path: [i] });
      else if (!out.includes(parsed.origin)) out.push(parsed.origin);
    });
    return out;
  });

/** WCAG 2.x relative luminance of `#rrggbb`. */
function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = parseInt(hex.slice(1 + i * 2, 3 + i * 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(0) + 0.7152 * channel(1) + 0.0722 * channel(2);
}

/** Contrast of white text on `hex` (WCAG: (L1 + 0.05) / (L2 + 0.05)). */
export const contrastWithWhite = (hex: string): number => 1.05 / (luminance(hex) + 0.05);

/** WCAG 2.x AA for normal text: the buttons' labels are normal text, white on the accent. */
export const MIN_CONTRAST = 4.5;

export const ZBrandColor = z
  .string()
  .regex(/^#[0-9a-fA-F]{6}$/, 'must be a colour as #rrggbb')
  // No transform (the OpenAPI document would lose the string): the service stores it lower-case.
  .superRefine((hex, ctx) => {
    if (!/^#[0-9a-fA-F]{6}$/.test(hex)) return;
    const ratio = contrastWithWhite(hex);
    if (ratio < MIN_CONTRAST) {
      ctx.addIssue({ code: 'custom', message: `white text on ${hex.toLowerCase()} has a contrast of ${(Math.floor(ratio * 100) / 100).toFixed(2)}:1, below the ${MIN_CONTRAST}:1 that WCAG asks for; choose a darker colour` });
    }
  });
