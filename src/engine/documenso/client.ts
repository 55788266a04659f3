/**
 * The documenso engine's transport: every call to Documenso's v2 API goes through here, over the
 * official SDK (the signed PDF over plain fetch: the SDK's download expects JSON). It adds what the SDK
 * leaves to the caller: a timeout per attempt, bounded retries with backoff on idempotent calls only
 * (a retried create or distribute could make a second envelope or send the invitations twice), a
 * circuit breaker so a dead Documenso answers at once, and one table from a failure to Signet's code.
 *
 * The API key lives only in the SDK's options and the download's header: errors are built fresh (no
 * `cause`, which would hold the SDK's Request and its headers), Documenso's text is scrubbed of the key,
 * and logs carry the operation, attempt, kind and status only. The SDK's debugLogger, which prints
 * headers, is never set.
 */
import { Documenso } from '@documenso/sdk-typescript';
import { DocumensoError } from '@documenso/sdk-typescript/models/errors/documensoerror.js';
import { HTTPClientError, InvalidRequestError, RequestTimeoutError } from '@documenso/sdk-typescript/models/errors/httpclienterrors.js';
import { ResponseValidationError } from '@documenso/sdk-typescript/models/errors/responsevalidationerror.js';
import { SDKValidationError } from '@documenso/sdk-typescript/models/errors/sdkvalidationerror.js';
import type * as ops from '@documenso/sdk-typescript/models/operations/index.js';
import { AppError, type ErrorCode } from '../../errors.js';

/** What went wrong with one call, before it is named for Signet's caller. */
export type FailureKind = 'unreachable' | 'timeout' | 'server' | 'open' | 'unauthorized' | 'not_found' | 'refused' | 'unexpected';

type Operation = { what: string; idempotent: boolean; refused: ErrorCode; unexpected?: ErrorCode };

/**
 * The one table from a failed call to what Signet's caller sees. Unreachable, timed out, 5xx, 429 and
 * an open circuit are always DOCUMENSO_UNAVAILABLE (503: retry with the same Idempotency-Key), and so
 * is a refused API key (the operator's to fix, not the caller's). `refused` names a 4xx answer (Documenso
 * is up and said no: the error says `retryable: false`); `unexpected` a 2xx whose body is not what was asked for.
 */
export const OPERATIONS = {
  // A 4xx on create is Documenso refusing this document or these recipients: the same request would be
  // refused again, so it is not reported as an outage (503) but as the engine's refusal, not retryable.
  createEnvelope: { what: 'create the envelope', idempotent: false, refused: 'SEND_FAILED' },
  getEnvelope: { what: 'read the envelope', idempotent: true, refused: 'DOCUMENSO_UNAVAILABLE' },
  updateEnvelope: { what: 'update the template', idempotent: false, refused: 'UPDATE_FAILED' },
  createFields: { what: 'add the fields', idempotent: false, refused: 'FIELD_CREATION_FAILED' },
  deleteField: { what: 'delete the field', idempotent: true, refused: 'DELETE_FAILED' },
  distribute: { what: 'send the envelope', idempotent: false, refused: 'SEND_FAILED' },
  redistribute: { what: 'remind the recipients', idempotent: false, refused: 'SEND_FAILED' },
  cancel: { what: 'cancel the envelope', idempotent: false, refused: 'INVALID_STATE' },
  deleteEnvelope: { what: 'delete the envelope', idempotent: true, refused: 'DOCUMENSO_UNAVAILABLE' },
  findEnvelopes: { what: 'list the envelopes', idempotent: true, refused: 'DOCUMENSO_UNAVAILABLE' },
  download: { what: 'download the PDF', idempotent: true, refused: 'DOWNLOAD_FAILED', unexpected: 'DOWNLOAD_FAILED' },
} as const satisfies Record<string, Operation>;
export type OperationName = keyof typeof OPERATIONS;

/** An AppError that also says, for the adapter and tests, what happened upstream. Only code and message reach a caller. */
export class DocumensoCallError extends AppError {
  readonly upstream: { op: OperationName; kind: FailureKind; status?: number; attempts: number };
  constructor(
    code: ErrorCode,
    message: string,
    upstream: { op: OperationName; kind: FailureKind; status?: number; attempts: number },
    extras: Record<string, unknown> = {},
  ) {
    super(code, message, extras);
    this.upstream = upstream;
  }
}

export type DocumensoClientOptions = {
  /** DOCUMENSO_URL: the v2 API base, e.g. https://app.documenso.com/api/v2. */
  url: string;
  /** DOCUMENSO_API_KEY. */
  apiKey: string;
  /** Per attempt, including reading the body. */
  timeoutMs?: number;
  /** Per attempt of a PDF download, body included: a large PDF takes longer than an API answer. Default 60 s. */
  downloadTimeoutMs?: number;
  /** Extra attempts for an idempotent call (get, download, delete). */
  retries?: number;
  /** First backoff; doubled per retry, with jitter. */
  backoffMs?: number;
  /**
   * Consecutive failed attempts that open the circuit, and how long it stays open. Downloads have a
   * circuit of their own with the same settings: slow large PDFs must not pause every other call.
   */
  breaker?: { failures?: number; coolDownMs?: number };
  log?: { warn(obj: Record<string, unknown>, msg: string): void };
  /** A download larger than this is refused (DOWNLOAD_FAILED) without being read whole. Default 100 MiB. */
  maxDownloadBytes?: number;
  /** A clock for the breaker (tests). */
  now?: () => number;
};

type Failure = { kind: FailureKind; status?: number; detail?: string };

/** A non-2xx download answer, or one that is not a PDF: classified like the SDK's errors. */
class DownloadReply extends Error {
  readonly status: number;
  readonly detail?: string;
  constructor(
    status: number,
    detail?: string,
  ) {
    super(`download answered ${status}`);
    this.status = status;
    this.detail = detail;
  }
}

const COUNTS_AS_DOWN: FailureKind[] = ['unreachable', 'timeout', 'server', 'unexpected'];
const RETRYABLE: FailureKind[] = ['unreachable', 'timeout', 'server'];

/** The body, or undefined past `max` bytes: the rest is not read (the stream is cancelled). */
async function readCapped(res: Response, max: number): Promise<Uint8Array | undefined> {
  if (Number(res.headers.get('content-length')) > max) {
    await res.body?.cancel();
    return undefined;
  }
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of res.body ?? []) {
    size += chunk.byteLength;
    if (size > max) return undefined;
    chunks.push(chunk);
  }
  const body = Buffer.concat(chunks);
  return new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
}

/** Documenso's own words from an error body ({message} from the API, {error} from the download route). */
function bodyMessage(body: string | undefined): string | undefined {
  try {
    const parsed = JSON.parse(body ?? '') as { message?: unknown; error?: unknown };
    const text = parsed.message ?? parsed.error;
    return typeof text === 'string' ? text.slice(0, 300) : undefined;
  } catch {
    return undefined;
  }
}

function byStatus(status: number, detail?: string): Failure {
  if (status >= 500 || status === 429 || status === 408) return { kind: 'server', status };
  if (status === 401 || status === 403) return { kind: 'unauthorized', status };
  if (status === 404) return { kind: 'not_found', status, detail };
  if (status >= 400) return { kind: 'refused', status, detail };
  return { kind: 'unexpected', status };
}

/** Undefined for what is not a call failure (a bug, a request the SDK refused to build): it is rethrown. */
function classify(err: unknown): Failure | undefined {
  // First: SDKValidationError's instanceof is duck-typed (rawValue, rawMessage, pretty) and matches this one too.
  if (err instanceof ResponseValidationError) return { kind: 'unexpected', status: err.statusCode };
  if (err instanceof SDKValidationError || err instanceof InvalidRequestError) return undefined;
  if (err instanceof RequestTimeoutError) return { kind: 'timeout' };
  if (err instanceof HTTPClientError) return { kind: 'unreachable' };
  if (err instanceof DocumensoError) return byStatus(err.statusCode, bodyMessage(err.body));
  if (err instanceof DownloadReply) return err.status === 200 ? { kind: 'unexpected', status: 200, detail: err.detail } : byStatus(err.status, err.detail);
  const name = (err as { name?: unknown } | null)?.name;
  if (name === 'TimeoutError' || name === 'AbortError') return { kind: 'timeout' };
  if (err instanceof TypeError) return { kind: 'unreachable' }; // fetch failed, or the body was cut off
  return undefined;
}

/** Closed → (K consecutive failures) → open for a cool-down → half-open: one probe decides. */
class Breaker {
  private failures = 0;
  private openedAt: number | null = null;
  private probing = false;
  private readonly threshold: number;
  private readonly coolDownMs: number;
  private readonly now: () => number;
  constructor(
    threshold: number,
    coolDownMs: number,
    now: () => number,
  ) {
    this.threshold = threshold;
    this.coolDownMs = coolDownMs;
    this.now = now;
  }

  get state(): 'closed' | 'open' | 'half-open' {
    if (this.openedAt === null) return 'closed';
    return this.now() - this.openedAt >= this.coolDownMs ? 'half-open' : 'open';
  }

  /** `{probe}`: go (as the one probe when half-open); a number: fail fast, probes are let through in that many ms. */
  admit(): { probe: boolean } | number {
    const state = this.state;
    if (state === 'closed') return { probe: false };
    if (state === 'half-open' && !this.probing) {
      this.probing = true;
      return { probe: true };
    }
    return Math.max(0, this.coolDownMs - (this.now() - (this.openedAt ?? 0)));
  }

  /** Documenso answered (a refusal too: it is up). True when this closed an open circuit. */
  alive(): boolean {
    const wasOpen = this.openedAt !== null;
    this.failures = 0;
    this.openedAt = null;
    this.probing = false;
    return wasOpen;
  }

  /** True when this failure opened (or re-opened) the circuit. */
  down(probe: boolean): boolean {
    this.failures += 1;
    if (probe || (this.openedAt === null && this.failures >= this.threshold)) {
      this.openedAt = this.now();
      this.probing = false;
      return true;
    }
    return false;
  }

  /** The probe ended without saying anything about Documenso (a bug on our side). */
  release(probe: boolean): void {
    if (probe) this.probing = false;
  }
}

export type DocumensoClient = ReturnType<typeof createDocumensoClient>;

export function createDocumensoClient(opts: DocumensoClientOptions) {
  const base = opts.url.replace(/\/+$/, '');
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const retries = opts.retries ?? 2;
  const maxDownloadBytes = opts.maxDownloadBytes ?? 100 * 1024 * 1024;
  const backoffMs = opts.backoffMs ?? 200;
  const downloadTimeoutMs = opts.downloadTimeoutMs ?? 60_000;
  const newBreaker = () => new Breaker(opts.breaker?.failures ?? 5, opts.breaker?.coolDownMs ?? 30_000, opts.now ?? Date.now);
  const breaker = newBreaker();
  const downloads = newBreaker();
  const breakerOf = (op: OperationName) => (op === 'download' ? downloads : breaker);
  const timeoutOf = (op: OperationName) => (op === 'download' ? downloadTimeoutMs : timeoutMs);
  // retryConfig none: retries are ours, so a non-idempotent call is never repeated by the SDK either.
  const sdk = new Documenso({ serverURL: base, apiKey: opts.apiKey, timeoutMs, retryConfig: { strategy: 'none' } });
  const perCall = { timeoutMs, retries: { strategy: 'none' as const } };
  const scrub = (text: string) => (opts.apiKey ? text.split(opts.apiKey).join('[redacted]') : text);

  function toError(op: OperationName, f: Failure, attempts: number, retryInMs?: number): DocumensoCallError {
    const spec: Operation = OPERATIONS[op];
    const upstream = { op, kind: f.kind, status: f.status, attempts };
    const fail = (code: ErrorCode, message: string, extras?: Record<string, unknown>) => new DocumensoCallError(code, scrub(message), upstream, extras);
    switch (f.kind) {
      case 'open':
        return fail('DOCUMENSO_UNAVAILABLE', `Documenso is failing; calls are paused for ${Math.max(1, Math.ceil((retryInMs ?? 0) / 1000))} s; retry with backoff and the same Idempotency-Key`);
      case 'unreachable':
        return fail('DOCUMENSO_UNAVAILABLE', `Documenso could not be reached to ${spec.what}; retry with backoff and the same Idempotency-Key`);
      case 'timeout':
        return fail('DOCUMENSO_UNAVAILABLE', `Documenso did not answer within ${timeoutOf(op)} ms to ${spec.what}; retry with backoff and the same Idempotency-Key`);
      case 'server':
        return fail('DOCUMENSO_UNAVAILABLE', `Documenso answered ${f.status} to ${spec.what}; retry with backoff and the same Idempotency-Key`);
      case 'unauthorized':
        return fail('DOCUMENSO_UNAVAILABLE', `Documenso refused this server's credentials (${f.status}) to ${spec.what}`);
      case 'unexpected':
        return fail(spec.unexpected ?? 'DOCUMENSO_UNAVAILABLE', `Documenso's answer to ${spec.what} was not what was asked for`);
      case 'not_found':
      case 'refused':
        // Documenso is up and said no: repeating the same call gets the same answer.
        return fail(spec.refused, `Documenso refused to ${spec.what} (${f.status}${f.detail ? `: ${f.detail}` : ''})`, spec.refused === 'DOCUMENSO_UNAVAILABLE' ? {} : { retryable: false });
    }
  }

  async function call<T>(op: OperationName, attempt: () => Promise<T>): Promise<T> {
    const maxAttempts = OPERATIONS[op].idempotent ? 1 + retries : 1;
    const breaker = breakerOf(op);
    for (let n = 1; ; n++) {
      const gate = breaker.admit();
      if (typeof gate === 'number') throw toError(op, { kind: 'open' }, n - 1, gate);
      let failure: Failure | undefined;
      try {
        const value = await attempt();
        if (breaker.alive()) opts.log?.warn({ op }, 'documenso: circuit closed');
        return value;
      } catch (err) {
        failure = classify(err);
        if (!failure) {
          breaker.release(gate.probe);
          throw err;
        }
      }
      if (!COUNTS_AS_DOWN.includes(failure.kind)) {
        if (breaker.alive()) opts.log?.warn({ op }, 'documenso: circuit closed');
      } else if (breaker.down(gate.probe)) opts.log?.warn({ op, kind: failure.kind, status: failure.status }, 'documenso: circuit open');
      if (n >= maxAttempts || !RETRYABLE.includes(failure.kind)) throw toError(op, failure, n);
      opts.log?.warn({ op, attempt: n, kind: failure.kind, status: failure.status }, 'documenso: call failed; retrying');
      const delay = backoffMs * 2 ** (n - 1);
      await new Promise((resolve) => setTimeout(resolve, delay / 2 + Math.random() * (delay / 2)));
    }
  }

  /** The call's 404, for the calls where "not there" is an answer rather than a failure. */
  const notFound = (err: unknown): DocumensoCallError | undefined => (err instanceof DocumensoCallError && err.upstream.kind === 'not_found' ? err : undefined);

  return {
    /** open, closed or half-open: for /health and tests. */
    get circuit() {
      return breaker.state;
    },
    /** The downloads' own circuit (tests). */
    get downloadCircuit() {
      return downloads.state;
    },
    createEnvelope: (req: ops.EnvelopeCreateRequest) => call('createEnvelope', () => sdk.envelopes.create(req, perCall)),
    /** Null when Documenso has no such envelope (deleted there). */
    getEnvelope: async (envelopeId: string): Promise<ops.EnvelopeGetResponse | null> => {
      try {
        return await call('getEnvelope', () => sdk.envelopes.get({ envelopeId }, perCall));
      } catch (err) {
        if (notFound(err)) return null;
        throw err;
      }
    },
    updateEnvelope: (req: ops.EnvelopeUpdateRequest) => call('updateEnvelope', () => sdk.envelopes.update(req, perCall)),
    createFields: async (req: ops.EnvelopeFieldCreateManyRequest) => (await call('createFields', () => sdk.envelopes.fields.createMany(req, perCall))).data,
    /** False when the field does not exist; true when a retry found it gone (the earlier, failed-looking attempt may have landed). */
    deleteField: async (fieldId: number): Promise<boolean> => {
      try {
        await call('deleteField', () => sdk.envelopes.fields.delete({ fieldId }, perCall));
        return true;
      } catch (err) {
        const e = notFound(err);
        if (e) return e.upstream.attempts > 1;
        throw err;
      }
    },
    distribute: (req: ops.EnvelopeDistributeRequest) => call('distribute', () => sdk.envelopes.distribute(req, perCall)),
    redistribute: (req: ops.EnvelopeRedistributeRequest) => call('redistribute', () => sdk.envelopes.redistribute(req, perCall)),
    cancel: async (envelopeId: string, reason?: string): Promise<void> => {
      await call('cancel', () => sdk.envelope.envelopeCancel({ envelopeId, reason }, perCall));
    },
    /** False when Documenso had no such envelope: the end state the caller wanted. */
    deleteEnvelope: async (envelopeId: string): Promise<boolean> => {
      try {
        await call('deleteEnvelope', () => sdk.envelopes.delete({ envelopeId }, perCall));
        return true;
      } catch (err) {
        if (notFound(err)) return false;
        throw err;
      }
    },
    /** One page of the team's envelopes (the orphan sweep's drafts), oldest first when asked `orderByDirection: 'asc'`. */
    findEnvelopes: (req: ops.EnvelopeFindRequest) => call('findEnvelopes', () => sdk.envelope.envelopeFind(req, perCall)),
    /** One document of the envelope: `signed` is the sealed PDF once COMPLETED (before that Documenso serves the original). */
    download: (envelopeItemId: string, version: 'signed' | 'original') =>
      call('download', async () => {
        const res = await fetch(`${base}/envelope/item/${encodeURIComponent(envelopeItemId)}/download?version=${version}`, {
          headers: { authorization: opts.apiKey, accept: 'application/pdf' },
          signal: AbortSignal.timeout(downloadTimeoutMs),
        });
        if (!res.ok) {
          const body = await readCapped(res, 64 * 1024).catch(() => undefined);
          throw new DownloadReply(res.status, bodyMessage(body && Buffer.from(body).toString('utf8')));
        }
        const bytes = await readCapped(res, maxDownloadBytes);
        if (!bytes) throw new DownloadReply(200, `larger than ${maxDownloadBytes} bytes`);
        const isPdf = (res.headers.get('content-type') ?? '').startsWith('application/pdf') && Buffer.from(bytes.subarray(0, 5)).toString('latin1') === '%PDF-';
        if (!isPdf) throw new DownloadReply(200);
        return bytes;
      }),
  };
}
