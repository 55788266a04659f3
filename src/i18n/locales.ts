/**
 * The languages a recipient can be addressed in. A recipient's `locale` (or a template slot's) wins, then
 * the account's default, then (on a page only) the browser's Accept-Language, then English.
 */
export const LOCALES = ['en', 'de', 'fr', 'es', 'pt', 'pl', 'zh-CN', 'ar'] as const;
export type Locale = (typeof LOCALES)[number];
export const DEFAULT_LOCALE: Locale = 'en';
/** Each language by its own name, as a chooser lists them. */
export const LOCALE_NAMES: Record<Locale, string> = { en: 'English', de: 'Deutsch', fr: 'Français', es: 'Español', pt: 'Português', pl: 'Polski', 'zh-CN': '简体中文', ar: 'العربية' };

const RTL = new Set<Locale>(['ar']);
export const isLocale = (value: unknown): value is Locale => typeof value === 'string' && (LOCALES as readonly string[]).includes(value);
export const textDirection = (locale: Locale): 'rtl' | 'ltr' => (RTL.has(locale) ? 'rtl' : 'ltr');

/** `de-AT` → de, `zh-Hans-CN`/`zh` → zh-CN, `pt-BR` → pt; anything else: undefined. */
export function matchLocale(tag: string): Locale | undefined {
  const lower = tag.trim().toLowerCase();
  if (!lower || lower === '*') return undefined;
  const base = lower.split('-')[0];
  if (base === 'zh') return /-(tw|hk|mo|hant)\b/.test(lower) ? undefined : 'zh-CN';
  return LOCALES.find((l) => l.toLowerCase() === base);
}

/** The best of ours for an Accept-Language header (q-values honoured, at most 20 entries read). */
export function negotiateLocale(header: string | undefined): Locale | undefined {
  if (!header) return undefined;
  const ranked = header
    .slice(0, 1000)
    .split(',')
    .slice(0, 20)
    .map((part, i) => {
      const [tag, ...params] = part.split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find(Boolean);
      return { tag, q: q === undefined ? 1 : Number(q), i };
    })
    .filter((e) => e.q > 0)
    .sort((a, b) => b.q - a.q || a.i - b.i);
  for (const { tag } of ranked) {
    const match = matchLocale(tag);
    if (match) return match;
  }
  return undefined;
}

/** The recipient's own, else the account's, else the browser's, else English. */
export function resolveLocale(...candidates: (string | null | undefined)[]): Locale {
  return candidates.find(isLocale) ?? DEFAULT_LOCALE;
}
