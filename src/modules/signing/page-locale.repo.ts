import { eq, or, sql } from 'drizzle-orm';
import type { DbOrTx } from '../../db/client.js';
import { customers, engineRecipients, envelopes } from '../../db/schema/index.js';
import { negotiateLocale, resolveLocale, type Locale } from '../../i18n/locales.js';
import { sha256Hex } from '../../lib/crypto.js';

/** The page's question: the language of the recipient behind a signing token, given the browser's Accept-Language. */
export type PageLocaleOf = (token: string | null, acceptLanguage: string | undefined) => Promise<Locale>;

/**
 * The recipient's own language, else their account's default, else the browser's, else English. One
 * indexed read by the token's hash (token_hash and legacy_token_hash are unique); a token that matches no
 * recipient, or none given (a malformed link), falls through to the browser's.
 */
export function createPageLocale(db: DbOrTx): PageLocaleOf {
  return async (token, acceptLanguage) => {
    const browser = negotiateLocale(acceptLanguage);
    if (!token) return resolveLocale(browser);
    const hash = sha256Hex(token);
    const [row] = await db
      .select({ recipient: engineRecipients.locale, account: customers.defaultLocale })
      .from(engineRecipients)
      .innerJoin(envelopes, eq(envelopes.engineEnvelopeId, sql`${engineRecipients.documentId}::text`))
      .innerJoin(customers, eq(customers.id, envelopes.customerId))
      .where(or(eq(engineRecipients.tokenHash, hash), eq(engineRecipients.legacyTokenHash, hash)))
      .limit(1);
    return resolveLocale(row?.recipient, row?.account, browser);
  };
}
