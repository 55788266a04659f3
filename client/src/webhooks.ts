import { createHmac, timingSafeEqual } from 'node:crypto';
import { SignetWebhookError } from './errors.js';

export type VerifyWebhookInput = {
  /** The raw request body, exactly as received (before any JSON parsing). */
  body: string | Uint8Array;
  /** The X-Service-Signature header. */
  signature: string | string[] | undefined | null;
  /** The registration's secret (whsec_…). */
  secret: string;
  /** How old a `t=` signature may be, in seconds (default 300, as Signet documents). */
  toleranceSeconds?: number;
  /** The current time, for tests. */
  now?: Date;
};

/** The header Signet signs deliveries with. */
export const SIGNATURE_HEADER = 'x-service-signature';

/**
 * Checks a delivery's signature and returns the parsed event. Signet signs the standard format as
 * `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>` and the alt format as
 * `sha256=<hex HMAC-SHA256(secret, body)>`; compared in constant time. Throws SignetWebhookError.
 */
export function verifyWebhook<T = Record<string, unknown>>(input: VerifyWebhookInput): T {
  const header = Array.isArray(input.signature) ? input.signature[0] : input.signature;
  if (!header) throw new SignetWebhookError(`no ${SIGNATURE_HEADER} header`);
  const body = typeof input.body === 'string' ? Buffer.from(input.body) : Buffer.from(input.body.buffer, input.body.byteOffset, input.body.byteLength);
  const parts = new Map(header.split(',').map((p) => {
    const i = p.indexOf('=');
    return [p.slice(0, i).trim(), p.slice(i + 1).trim()] as const;
  }));
  let expected: string;
  let given: string | undefined;
  if (parts.has('t')) {
    const t = Number(parts.get('t'));
    if (!Number.isInteger(t)) throw new SignetWebhookError('malformed signature timestamp');
    const age = Math.abs((input.now ?? new Date()).getTime() / 1000 - t);
    if (age > (input.toleranceSeconds ?? 300)) throw new SignetWebhookError(`signature timestamp outside the tolerance (${Math.round(age)} s)`);
    expected = createHmac('sha256', input.secret).update(`${t}.`).update(body).digest('hex');
    given = parts.get('v1');
  } else {
    expected = createHmac('sha256', input.secret).update(body).digest('hex');
    given = parts.get('sha256');
  }
  if (!given || !/^[0-9a-f]{64}$/i.test(given)) throw new SignetWebhookError('malformed signature');
  if (!timingSafeEqual(Buffer.from(expected, 'hex'), Buffer.from(given, 'hex'))) throw new SignetWebhookError('signature mismatch');
  return JSON.parse(body.toString('utf8')) as T;
}
