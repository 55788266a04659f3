import createClient, { type Client } from 'openapi-fetch';
import { SignetError } from './errors.js';
import { retryingFetch, type FetchLike } from './retry.js';
import { multipart, toBlob, type FileInput } from './upload.js';
import type { components, operations, paths } from './schema.js';

export type Schemas = components['schemas'];
type JsonBody<O extends keyof operations> = operations[O] extends { requestBody?: { content: { 'application/json': infer B } } } ? B : never;
type Query<O extends keyof operations> = operations[O] extends { parameters: { query?: infer Q } } ? NonNullable<Q> : never;
type Part<O extends keyof operations> = operations[O] extends { requestBody: { content: { 'multipart/form-data': { payload: infer P } } } } ? P : never;

export type CreateEnvelopeInput = Part<'createEnvelope'> & { file: FileInput };
export type CreateTemplateInput = Part<'createTemplate'> & { file: FileInput };
export type CallOptions = { idempotencyKey?: string; headers?: Record<string, string> };
type Paging = { limit?: number; offset?: number };
type OffsetPage<T> = { data: T[]; total: number; limit: number; offset: number };

export type SignetOptions = {
  /** Where Signet answers, e.g. http://localhost:3000. */
  baseUrl: string;
  /** svc_live_… or svc_test_…; leave out when `fetch` pays with x402. */
  apiKey?: string;
  /** Any fetch-compatible function, e.g. wrapFetchWithPayment(fetch, payer) from @x402/fetch. */
  fetch?: (input: Request, init?: RequestInit) => Promise<Response>;
  /** Retries of a call on a network error, 429, 503 or 409 IDEMPOTENCY_KEY_IN_USE (default 3). */
  maxRetries?: number;
  /** First backoff in ms, doubled per retry (default 500). */
  retryDelayMs?: number;
  /** Headers sent on every call. */
  headers?: Record<string, string>;
};

const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** The answer's body, or a SignetError for an error answer. */
function unwrap<T>(result: { data?: T; error?: unknown; response: Response }): T {
  if (result.response.ok) return result.data as T;
  throw SignetError.fromBody(result.response.status, result.error, result.response.headers.get('x-request-id') ?? undefined);
}

/** Every item of a list, page after page, until `total` is reached. */
async function* everyItem<T>(page: (paging: Required<Paging>) => Promise<{ data: T[]; total: number }>, first: Paging = {}): AsyncGenerator<T> {
  const limit = first.limit ?? 100;
  for (let offset = first.offset ?? 0; ; offset += limit) {
    const { data, total } = await page({ limit, offset });
    yield* data;
    if (data.length === 0 || offset + data.length >= total) return;
  }
}

export class Signet {
  /** The raw typed client (openapi-fetch) for every route of the OpenAPI document. */
  readonly api: Client<paths>;

  constructor(opts: SignetOptions) {
    const base = (opts.fetch ?? ((input: Request, init?: RequestInit) => globalThis.fetch(input, init))) as FetchLike;
    this.api = createClient<paths>({
      baseUrl: opts.baseUrl.replace(/\/+$/, ''),
      fetch: retryingFetch(base, { maxRetries: opts.maxRetries ?? 3, baseDelayMs: opts.retryDelayMs ?? 500 }),
      headers: { ...(opts.apiKey ? { authorization: `Bearer ${opts.apiKey}` } : {}), ...opts.headers },
    });
    // One key per call, made before the first attempt: every retry of the call (and an x402 paid
    // retry) repeats it, so a call is charged once however often it is sent.
    this.api.use({
      onRequest: ({ request }) => {
        if (MUTATING.has(request.method) && !request.headers.has('idempotency-key')) request.headers.set('idempotency-key', crypto.randomUUID());
        return request;
      },
    });
  }

  private async upload<T>(path: '/v1/envelopes' | '/v1/envelopes/draft' | '/v1/templates', part: string, input: { file: FileInput }, opts: CallOptions = {}): Promise<T> {
    const { file, ...payload } = input;
    const body = await multipart(part, file, payload);
    const result = await this.api.POST(path, { body: body as never, headers: callHeaders(opts), bodySerializer: (b: unknown) => b as FormData });
    return unwrap(result as never) as T;
  }

  readonly envelopes = {
    /** Uploads the PDF and sends it (or keeps a DRAFT with draft: true). Billable: one key per call. */
    create: (input: CreateEnvelopeInput, opts?: CallOptions): Promise<Schemas['Envelope']> => this.upload('/v1/envelopes', 'pdf', input, opts),
    createDraft: (input: CreateEnvelopeInput, opts?: CallOptions) => this.upload<operations['createDraftEnvelope']['responses'][201]['content']['application/json']>('/v1/envelopes/draft', 'pdf', input, opts),
    get: async (id: string) => unwrap(await this.api.GET('/v1/envelopes/{id}', { params: { path: { id } } })),
    status: async (id: string) => unwrap(await this.api.GET('/v1/envelopes/{id}/status', { params: { path: { id } } })),
    list: async (query: Query<'listEnvelopes'> = {}) => unwrap(await this.api.GET('/v1/envelopes', { params: { query } })) as OffsetPage<Schemas['Envelope']>,
    all: (query: Omit<Query<'listEnvelopes'>, 'page' | 'perPage'> = {}) => everyItem((p) => this.envelopes.list({ ...query, ...p }), query),
    /** The sealed PDF (version 'signed', the default, once COMPLETED) or the original upload. */
    download: async (id: string, query: Query<'downloadEnvelope'> = {}): Promise<Uint8Array> => {
      const result = await this.api.GET('/v1/envelopes/{id}/download', { params: { path: { id }, query }, parseAs: 'arrayBuffer' });
      return new Uint8Array(unwrap(result as never) as ArrayBuffer);
    },
    send: async (id: string, meta?: NonNullable<JsonBody<'sendEnvelope'>>['meta'], opts?: CallOptions) =>
      unwrap(await this.api.POST('/v1/envelopes/{id}/send', { params: { path: { id }, header: keyOf(opts) }, body: meta ? { meta } : {}, headers: callHeaders(opts) })),
    resend: async (id: string, opts?: CallOptions) => unwrap(await this.api.POST('/v1/envelopes/{id}/resend', { params: { path: { id } }, headers: callHeaders(opts) })),
    cancel: async (id: string, opts?: CallOptions) => unwrap(await this.api.DELETE('/v1/envelopes/{id}', { params: { path: { id } }, headers: callHeaders(opts) })),
    addFields: async (id: string, fields: JsonBody<'addEnvelopeFields'>['fields'], opts?: CallOptions) =>
      unwrap(await this.api.POST('/v1/envelopes/{id}/fields', { params: { path: { id } }, body: { fields }, headers: callHeaders(opts) })),
    removeField: async (id: string, fid: string, opts?: CallOptions) => {
      unwrap(await this.api.DELETE('/v1/envelopes/{id}/fields/{fid}', { params: { path: { id, fid } }, headers: callHeaders(opts) }));
    },
  };

  readonly templates = {
    create: (input: CreateTemplateInput, opts?: CallOptions): Promise<Schemas['Template']> => this.upload('/v1/templates', 'file', input, opts),
    get: async (id: string) => unwrap(await this.api.GET('/v1/templates/{id}', { params: { path: { id } } })),
    list: async (query: Query<'listTemplates'> = {}) => unwrap(await this.api.GET('/v1/templates', { params: { query } })) as OffsetPage<Schemas['Template']>,
    all: (query: Paging = {}) => everyItem((p) => this.templates.list(p), query),
    update: async (id: string, patch: JsonBody<'updateTemplate'>, opts?: CallOptions) =>
      unwrap(await this.api.PUT('/v1/templates/{id}', { params: { path: { id } }, body: patch, headers: callHeaders(opts) })),
    delete: async (id: string, opts?: CallOptions) => {
      unwrap(await this.api.DELETE('/v1/templates/{id}', { params: { path: { id } }, headers: callHeaders(opts) }));
    },
    /** An envelope from the template, each slot given a person. Billable when sent: one key per call. */
    createEnvelope: async (id: string, input: JsonBody<'createEnvelopeFromTemplate'>, opts?: CallOptions) =>
      unwrap(await this.api.POST('/v1/templates/{id}/from-template', { params: { path: { id }, header: keyOf(opts) }, body: input, headers: callHeaders(opts) })),
  };

  readonly webhooks = {
    /** The answer holds the secret (whsec_…), shown this once: keep it for verifyWebhook. */
    create: async (input: JsonBody<'createWebhook'>, opts?: CallOptions) => unwrap(await this.api.POST('/v1/webhooks', { body: input, headers: callHeaders(opts) })),
    get: async (id: string) => unwrap(await this.api.GET('/v1/webhooks/{id}', { params: { path: { id } } })),
    list: async (query: Query<'listWebhooks'> = {}) => unwrap(await this.api.GET('/v1/webhooks', { params: { query } })) as OffsetPage<Schemas['Webhook']>,
    all: (query: Paging = {}) => everyItem((p) => this.webhooks.list(p), query),
    update: async (id: string, patch: JsonBody<'updateWebhook'>, opts?: CallOptions) =>
      unwrap(await this.api.PUT('/v1/webhooks/{id}', { params: { path: { id } }, body: patch, headers: callHeaders(opts) })),
    delete: async (id: string, opts?: CallOptions) => {
      unwrap(await this.api.DELETE('/v1/webhooks/{id}', { params: { path: { id } }, headers: callHeaders(opts) }));
    },
    deliveries: async (id: string, query: Query<'listWebhookDeliveries'> = {}) =>
      unwrap(await this.api.GET('/v1/webhooks/{id}/deliveries', { params: { path: { id }, query } })) as OffsetPage<Schemas['WebhookDelivery']>,
  };

  readonly verifications = {
    /** Billable: one key per call. */
    create: async (input: JsonBody<'createVerification'>, opts?: CallOptions) => unwrap(await this.api.POST('/v1/verifications', { params: { header: keyOf(opts) }, body: input, headers: callHeaders(opts) })),
    get: async (id: string) => unwrap(await this.api.GET('/v1/verifications/{id}', { params: { path: { id } } })),
    status: async (id: string) => unwrap(await this.api.GET('/v1/verifications/{id}/status', { params: { path: { id } } })),
    list: async (query: Query<'listVerifications'> = {}) => unwrap(await this.api.GET('/v1/verifications', { params: { query } })) as OffsetPage<Schemas['Verification']>,
    all: (query: Omit<Query<'listVerifications'>, 'page' | 'perPage'> = {}) => everyItem((p) => this.verifications.list({ ...query, ...p }), query),
    cancel: async (id: string, opts?: CallOptions) => unwrap(await this.api.POST('/v1/verifications/{id}/cancel', { params: { path: { id } }, headers: callHeaders(opts) })),
  };

  readonly account = {
    get: async () => unwrap(await this.api.GET('/v1/account')),
    update: async (patch: JsonBody<'updateAccount'>, opts?: CallOptions) => unwrap(await this.api.PATCH('/v1/account', { body: patch, headers: callHeaders(opts) })),
    usage: async (query: Query<'listUsage'> = {}) => unwrap(await this.api.GET('/v1/account/usage', { params: { query } })),
  };

  readonly documents = {
    /** Was this PDF sealed by this server, and is it unchanged since? Free. */
    verify: async (file: FileInput) => {
      const blob = await toBlob(file);
      const result = await this.api.POST('/v1/documents/verify', {
        body: blob as never,
        headers: { 'content-type': 'application/pdf' },
        bodySerializer: (b: unknown) => b as Blob as never,
      });
      return unwrap(result);
    },
  };
}

const callHeaders = (opts: CallOptions = {}) => ({ ...opts.headers, ...(opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {}) });
const keyOf = (opts: CallOptions = {}) => ({ 'idempotency-key': opts.idempotencyKey ?? crypto.randomUUID() });
