/**
 * Message catalogues: src/i18n/messages/<locale>/<namespace>.json, each a flat object of ICU messages
 * (plurals, selects, dates through intl-messageformat). A key is `<namespace>.<name>`; a message missing
 * from a locale falls back to English, and the catalogue test keeps that from happening.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IntlMessageFormat } from 'intl-messageformat';
import { DEFAULT_LOCALE, LOCALES, type Locale } from './locales.js';

/** Beside this module under tsx and in dist/ once the build copies them. */
export const MESSAGES_DIR = fileURLToPath(new URL('./messages/', import.meta.url));

export type Messages = Record<string, string>;
export type MessageValues = Record<string, string | number | Date | boolean | null | undefined>;

function readLocale(locale: Locale): Messages {
  const dir = path.join(MESSAGES_DIR, locale);
  const messages: Messages = {};
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const namespace = file.slice(0, -'.json'.length);
    const entries = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Record<string, unknown>;
    for (const [name, text] of Object.entries(entries)) {
      if (typeof text !== 'string') throw new Error(`${locale}/${file}: ${name} is not a string`);
      messages[`${namespace}.${name}`] = text;
    }
  }
  return messages;
}

let catalogues: Map<Locale, Messages> | undefined;
/** Every locale's messages, read once. */
export function allMessages(): Map<Locale, Messages> {
  catalogues ??= new Map(LOCALES.map((l) => [l, readLocale(l)]));
  return catalogues;
}

const formats = new Map<string, IntlMessageFormat>();
function compiled(locale: Locale, key: string): IntlMessageFormat {
  const id = `${locale}\0${key}`;
  let format = formats.get(id);
  if (!format) {
    const text = allMessages().get(locale)?.[key] ?? allMessages().get(DEFAULT_LOCALE)?.[key];
    if (text === undefined) throw new Error(`no message ${key}`);
    format = new IntlMessageFormat(text, locale);
    formats.set(id, format);
  }
  return format;
}

/** The message `key` in `locale`, formatted with `values`. */
export function t(locale: Locale, key: string, values?: MessageValues): string {
  return String(compiled(locale, key).format(values as Record<string, string>));
}

/**
 * The raw messages of the namespaces that start with one of `prefixes` (English where the locale lacks
 * one): what a page's script formats in the browser.
 */
export function messagesFor(locale: Locale, prefixes: string[]): Messages {
  const out: Messages = {};
  const pick = (source: Messages | undefined) => {
    for (const [key, text] of Object.entries(source ?? {})) if (prefixes.some((p) => key.startsWith(p))) out[key] = text;
  };
  pick(allMessages().get(DEFAULT_LOCALE));
  pick(allMessages().get(locale));
  return out;
}

/** JSON for a `<script type="application/json">` block: nothing in it can end the element. */
export const messagesJson = (messages: Messages): string => JSON.stringify(messages).replace(/</g, '\\u003c');
