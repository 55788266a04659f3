import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { AppError } from '../../errors.js';
import { checkResolvable, parseWebhookUrl, WebhookDnsError, type ResolvedAddress, type Resolver } from './url-policy.js';

/**
 * node:http as its CommonJS exports: an ES import of it reads every export, among them the lazy
 * WebSocket, CloseEvent and MessageEvent that load Node's fetch (undici), some 13 MiB of RSS and 3 MiB
 * of heap an idle server need not hold (docs/operating.md: Memory).
 */
const http = process.getBuiltinModule('node:http');

export type PostWebhookOptions = {
  url: string;
  body: string;
  headers: Record<string, string>;
  /** The whole attempt: DNS, connect, TLS, request, response headers and the (capped) body. */
  timeoutMs: number;
  allowHosts: readonly string[];
  ownOrigins: readonly string[];
  resolver?: Resolver;
  /** How much of the receiver's answer is read before the connection is dropped (default 64 KiB). */
  maxResponseBytes?: number;
};

export type PostWebhookResult = {
  /** A 2xx answer. */
  ok: boolean;
  /** The receiver's HTTP status, or null when there was none (refused, DNS, connect error, timeout). */
  status: number | null;
  /** A short, customer-readable reason when not ok; null when ok. */
  error: string | null;
  durationMs: number;
  /** 410 Gone: the receiver asks to be unsubscribed. */
  gone: boolean;
};

const DEFAULT_MAX_RESPONSE_BYTES = 65_536;
const ERROR_SNIPPET_CHARS = 200;

class Timeout extends Error {}

/**
 * One webhook POST. Never throws: every outcome is a result the delivery job can record.
 *
 * The URL is re-validated here because DNS answers and the policy may have changed since the
 * registration. The name is resolved exactly once, every answer is checked, and the socket is opened
 * to the checked address through a lookup that can only return that address; TLS still verifies the
 * certificate against the host name (and sends it as SNI). Redirects are never followed: the target
 * of a Location header has not been checked and would be the easiest way around the policy.
 */
export async function postWebhook(opts: PostWebhookOptions): Promise<PostWebhookResult> {
  const started = performance.now();
  const done = (r: Omit<PostWebhookResult, 'durationMs'>): PostWebhookResult => ({
    ...r,
    durationMs: Math.round(performance.now() - started),
  });
  const failed = (error: string, status: number | null = null) => done({ ok: false, status, error, gone: status === 410 });

  let url: URL;
  let target: ResolvedAddress;
  try {
    url = parseWebhookUrl(opts.url, opts).url;
    target = await checkResolvable(url, { allowHosts: opts.allowHosts, resolver: opts.resolver, timeoutMs: opts.timeoutMs });
  } catch (err) {
    if (err instanceof WebhookDnsError) return failed(`dns: ${err.message}`);
    if (err instanceof AppError) return failed(`refused: ${err.message}`);
    return failed(`refused: ${shortMessage(err)}`);
  }

  const remaining = opts.timeoutMs - (performance.now() - started);
  if (remaining <= 0) return failed(`timeout after ${opts.timeoutMs} ms`);
  try {
    const { status, snippet } = await send(url, target, opts, remaining);
    if (status >= 200 && status < 300) return done({ ok: true, status, error: null, gone: false });
    if (status >= 300 && status < 400) return failed(`redirect not followed (${status})`, status);
    return failed(snippet ? `HTTP ${status}: ${snippet}` : `HTTP ${status}`, status);
  } catch (err) {
    if (err instanceof Timeout) return failed(`timeout after ${opts.timeoutMs} ms`);
    return failed(connectionError(err));
  }
}

function send(
  url: URL,
  target: ResolvedAddress,
  opts: PostWebhookOptions,
  timeoutMs: number,
): Promise<{ status: number; snippet: string }> {
  const maxBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
  const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  const isHttps = url.protocol === 'https:';

  // Whatever name net.connect asks about, the answer is the address that passed the policy.
  const pinned: LookupFunction = (_name, options, callback) => {
    if (options.all) callback(null, [{ address: target.address, family: target.family }]);
    else callback(null, target.address, target.family);
  };

  return new Promise((resolve, reject) => {
    let settled = false;
    const finish = (fn: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      fn();
    };

    const headers: Record<string, string> = { ...opts.headers, host: url.host, 'content-length': String(Buffer.byteLength(opts.body)) };
    const req = (isHttps ? https : http).request({
      method: 'POST',
      protocol: url.protocol,
      hostname,
      port: url.port || (isHttps ? 443 : 80),
      path: `${url.pathname}${url.search}`,
      headers,
      setHost: false,
      lookup: pinned,
      // A fresh connection per attempt: a pooled socket could outlive the address check it was made under.
      agent: false,
      ...(isHttps && !isIP(hostname) ? { servername: hostname } : {}),
    });

    const timer = setTimeout(() => {
      finish(() => reject(new Timeout()));
      req.destroy();
    }, timeoutMs);

    req.on('error', (err) => finish(() => reject(err)));
    req.on('response', (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let received = 0;
      const complete = () => {
        const text = Buffer.concat(chunks).subarray(0, 4096).toString('utf8');
        finish(() => resolve({ status, snippet: snippetOf(text) }));
      };
      res.on('data', (chunk: Buffer) => {
        if (received < 4096) chunks.push(chunk);
        received += chunk.length;
        if (received >= maxBytes) {
          // Enough: the rest is never read, and the socket goes with it.
          complete();
          req.destroy();
        }
      });
      res.on('end', complete);
      // The status line arrived, so the receiver answered; a connection lost mid-body does not change that.
      res.on('error', complete);
      res.on('close', complete);
    });
    req.end(opts.body);
  });
}

/** A one-line extract of a receiver's error body, for the delivery's errorMessage. */
function snippetOf(text: string): string {
  const line = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').replace(/\s+/g, ' ').trim();
  return line.length > ERROR_SNIPPET_CHARS ? `${line.slice(0, ERROR_SNIPPET_CHARS)}…` : line;
}

const CONNECTION_ERRORS: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset by the receiver',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed by the receiver',
  ERR_SSL_WRONG_VERSION_NUMBER: 'tls: the receiver does not speak TLS on this port',
};

function connectionError(err: unknown): string {
  const code = (err as NodeJS.ErrnoException)?.code;
  if (code && CONNECTION_ERRORS[code]) return CONNECTION_ERRORS[code];
  // OpenSSL's own text names source files and internal codes; keep only what a customer can act on.
  if (code === 'EPROTO') return /wrong version number/i.test(String((err as Error).message)) ? CONNECTION_ERRORS.ERR_SSL_WRONG_VERSION_NUMBER : 'tls: handshake failed';
  if (code && /CERT|TLS|SSL|SELF_SIGNED|ALTNAME/.test(code)) return `tls: ${code}`;
  if (code === 'HPE_INVALID_CONSTANT' || code?.startsWith('HPE_')) return `invalid HTTP response (${code})`;
  return `connection error: ${shortMessage(err)}`;
}

function shortMessage(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  const text = e?.code ? `${e.code} ${e.message ?? ''}` : String(e?.message ?? err);
  return text.split('\n')[0].slice(0, 200);
}
