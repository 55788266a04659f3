// The page's messages: the server embeds the recipient's locale's catalogue as JSON in
// #signet-messages, and intl-messageformat (its browser build, served beside this file) formats them,
// plurals and dates included. A key without a message shows the key, so a gap is visible, never blank.
import { IntlMessageFormat } from './intl-messageformat.js';

const block = document.getElementById('signet-messages');
const messages = block ? JSON.parse(block.textContent || '{}') : {};
export const locale = document.documentElement.lang || 'en';
const formats = new Map();

/** The message `key` formatted with `values` in the page's locale. */
export function t(key, values) {
  const text = messages[key];
  if (text === undefined) return key;
  let format = formats.get(key);
  if (!format) {
    format = new IntlMessageFormat(text, locale);
    formats.set(key, format);
  }
  return String(format.format(values));
}

/**
 * What a refused request says to the recipient: the catalogue's words for the API's code where it has
 * them (signing-errors), else `fallback` (a key taking the HTTP status). The server's own message is
 * English, for developers; it is never shown.
 */
export function problem(result, fallback) {
  const code = result.body?.code;
  const known = code ? t(`signing-errors.${code}`, { seconds: result.body?.retryAfterSeconds ?? 0, attempts: result.body?.attemptsLeft ?? 0 }) : null;
  return known && known !== `signing-errors.${code}` ? known : t(fallback, { status: result.status });
}
