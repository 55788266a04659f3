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
