/**
 * The last pass over the generated OpenAPI document, for what route schemas cannot say through
 * @fastify/swagger and what client generators need: binary parts typed as binary, JSON parts of a
 * multipart body declared as JSON (OpenAPI 3.1 `encoding`), and an example on every request and response.
 * Examples are sampled from the schemas themselves (preferring a schema's own `examples`), so they are
 * true by construction; test/openapi-document.test.ts validates each against its schema.
 */
import { ERROR_CODES, type ErrorCode } from '../errors.js';
import { REQUEST_EXAMPLES } from './openapi-examples.js';

type Json = Record<string, unknown>;
type Media = { schema?: Json; example?: unknown; examples?: unknown; encoding?: Record<string, { contentType: string }> };
type Operation = { operationId?: string; requestBody?: { content?: Record<string, Media> }; responses?: Record<string, { content?: Record<string, Media> }> };

const BINARY = { type: 'string', format: 'binary' };
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export function polishOpenApi<T extends Json>(doc: T): T {
  const schemas = ((doc.components as Json | undefined)?.schemas ?? {}) as Record<string, Json>;
  const resolve = (s: Json): Json => (typeof s.$ref === 'string' ? resolve(schemas[s.$ref.split('/').pop()!] ?? {}) : s);
  for (const item of Object.values((doc.paths ?? {}) as Record<string, Record<string, Operation>>)) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      for (const [type, media] of Object.entries(op.requestBody?.content ?? {})) {
        // A CSV body is its text; the same route's multipart form then carries it as a `file` part.
        if (type === 'text/csv') {
          op.requestBody!.content![type] = { schema: { type: 'string', contentMediaType: 'text/csv' }, example: 'recipients.1.email,recipients.1.name,prefill.2\nada@example.com,Ada Lovelace,Analytical Engines Ltd\n' };
          if (op.requestBody!.content!['multipart/form-data']) {
            op.requestBody!.content!['multipart/form-data'] = { schema: { type: 'object', required: ['file'], properties: { file: { ...BINARY, contentMediaType: 'text/csv' } } }, encoding: { file: { contentType: 'text/csv' } }, example: { file: '<CSV bytes>' } };
          }
          continue;
        }
        if (type === 'multipart/form-data' && media.schema && media.encoding === undefined) describeParts(media, resolve);
        // A raw upload is the bytes themselves, not the multipart form's object.
        if (type === 'application/pdf') {
          op.requestBody!.content![type] = { schema: { ...BINARY, contentMediaType: 'application/pdf' } };
          continue;
        }
        if (media.example === undefined && media.examples === undefined && media.schema) media.example = REQUEST_EXAMPLES[op.operationId ?? ''] ?? sample(media.schema, resolve, 'request');
      }
      for (const [status, response] of Object.entries(op.responses ?? {})) {
        const isError = !status.startsWith('2');
        // A route that produces a PDF still answers its errors as JSON: @fastify/swagger files them under the PDF type.
        if (isError && response.content && !response.content['application/json']) response.content = { 'application/json': Object.values(response.content)[0] };
        for (const [type, media] of Object.entries(response.content ?? {})) {
          if (type !== 'application/json') {
            response.content![type] = { schema: { ...BINARY, contentMediaType: type } };
            continue;
          }
          if (media.example !== undefined || media.examples !== undefined || !media.schema) continue;
          media.example = isError ? errorExample(resolve(media.schema)) : sample(media.schema, resolve, 'response');
        }
      }
    }
  }
  return doc;
}

/** File parts become binary; a part holding an object is JSON, so generators type it and send it as such. */
function describeParts(media: Media, resolve: (s: Json) => Json): void {
  const props = (resolve(media.schema!).properties ?? {}) as Record<string, Json>;
  const encoding: Record<string, { contentType: string }> = {};
  for (const [name, part] of Object.entries(props)) {
    const real = resolve(part);
    // A PDF unless the part names its types (the logo's: image/png, image/jpeg).
    if (real.format === 'binary') encoding[name] = { contentType: typeof real.contentMediaType === 'string' ? real.contentMediaType : 'application/pdf' };
    else if (real.type === 'object' || real.anyOf || real.oneOf) encoding[name] = { contentType: 'application/json' };
  }
  if (Object.keys(encoding).length) media.encoding = encoding;
}

/** An error as the handler renders it: the first code this status documents, with its meaning. */
function errorExample(schema: Json): unknown {
  const code = ((schema.properties as Json | undefined)?.code as Json | undefined)?.enum as ErrorCode[] | undefined;
  if (!code?.length) return sample(schema, (s) => s, 'response');
  const error = { error: ERROR_CODES[code[0]]?.[1] ?? code[0], code: code[0] };
  // /health's 503 is its own body with the error's code in it; every other error also carries the request id.
  if (Object.keys(schema.properties as Json).length > 4) return { ...(sample(schema, (s) => s, 'response') as Json), ...error };
  return { ...error, requestId: 'req-1' };
}

const FORMATS: Record<string, string> = {
  uuid: '3f2b8c1e-5d4a-4b6f-9e21-7c0d8a9b1e42',
  'date-time': '2026-01-15T10:00:00.000Z',
  date: '2026-01-15',
  email: 'ada@example.com',
  uri: 'https://example.com/signed',
  url: 'https://example.com/signed',
  binary: '<PDF bytes>',
};

/** Plain-text strings named for what they hold, so an example reads like a real call. */
function hintFor(name: string): string | undefined {
  if (/At$/.test(name)) return FORMATS['date-time'];
  if (/email$/i.test(name)) return FORMATS.email;
  if (/url$/i.test(name)) return name === 'signingUrl' ? 'https://signet.example/sign/4f1c…' : FORMATS.url;
  if (/Id$|^id$/.test(name)) return FORMATS.uuid;
  return { title: 'Mutual NDA', name: 'Ada Lovelace', subject: 'Please sign the NDA', message: 'Thank you!', error: 'The request failed', description: 'Production events' }[name];
}

/**
 * A value that satisfies `schema`: its own example first, then const, enum, format and bounds. Requests
 * carry only required properties (and those with an example of their own), so they read like a minimal
 * call; responses and errors carry every property, so they show the whole shape.
 */
export function sample(schema: Json, resolve: (s: Json) => Json, kind: 'request' | 'response' | 'error', depth = 0, name = ''): unknown {
  const s = resolve(schema);
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  if (s.example !== undefined) return s.example;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  if (s.default !== undefined && kind === 'request') return s.default;
  const union = (s.anyOf ?? s.oneOf) as Json[] | undefined;
  if (union?.length) return sample(union.find((u) => resolve(u).type !== 'null') ?? union[0], resolve, kind, depth, name);
  if (Array.isArray(s.allOf)) return Object.assign({}, ...(s.allOf as Json[]).map((p) => sample(p, resolve, kind, depth, name)));
  const type = Array.isArray(s.type) ? (s.type as string[]).find((t) => t !== 'null') : (s.type as string | undefined);
  switch (type) {
    case 'string': {
      if (typeof s.format === 'string' && FORMATS[s.format]) return FORMATS[s.format];
      const hint = s.format === undefined && s.pattern === undefined ? hintFor(name) : undefined;
      if (hint !== undefined && hint.length >= ((s.minLength as number | undefined) ?? 0) && hint.length <= ((s.maxLength as number | undefined) ?? Infinity)) return hint;
      const min = typeof s.minLength === 'number' ? s.minLength : 0;
      const word = kind === 'error' ? 'The request failed' : 'string';
      return word.length >= min ? word.slice(0, typeof s.maxLength === 'number' ? s.maxLength : undefined) : word.padEnd(min, 'x');
    }
    case 'integer':
    case 'number':
      // 1 unless the bounds exclude it: an unbounded int64 reads better as 1 than as its minimum.
      return Math.min(Math.max(1, typeof s.minimum === 'number' ? s.minimum : -Infinity, typeof s.exclusiveMinimum === 'number' ? s.exclusiveMinimum + 1 : -Infinity), typeof s.maximum === 'number' ? s.maximum : Infinity);
    case 'boolean':
      return true;
    case 'null':
      return null;
    case 'array': {
      if (depth > 6 || !s.items) return [];
      const n = Math.max(1, typeof s.minItems === 'number' ? s.minItems : 1);
      return Array.from({ length: n }, () => sample(s.items as Json, resolve, kind, depth + 1, name));
    }
    case 'object':
    default: {
      const props = (s.properties ?? {}) as Record<string, Json>;
      const required = new Set((s.required ?? []) as string[]);
      const out: Json = {};
      if (depth > 6) return out;
      for (const [name, p] of Object.entries(props)) {
        const own = resolve(p);
        if (kind === 'request' && !required.has(name) && own.examples === undefined) continue;
        if (kind === 'error' && !required.has(name)) continue;
        out[name] = sample(p, resolve, kind, depth + 1, name);
      }
      return out;
    }
  }
}
