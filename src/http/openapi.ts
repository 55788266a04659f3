import fastifySwagger from '@fastify/swagger';
import type { FastifyInstance, RouteOptions } from 'fastify';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { PRICES, type BillableOperation } from '../lib/prices.js';
import { formatUsd } from '../lib/money.js';
import { ERROR_CODES } from '../errors.js';
import { polishOpenApi } from './openapi-polish.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The billable operation this route charges for; shown in the OpenAPI and llms.txt. */
    price?: BillableOperation;
  }
}

export type RouteEntry = { method: string; url: string; summary: string; auth: string; price?: BillableOperation; idempotency?: string };

const ERRORS_DOC = Object.entries(ERROR_CODES)
  .map(([code, [status, meaning]]) => `| ${code} | ${status} | ${meaning} |`)
  .join('\n');

const DESCRIPTION = `Signet is an electronic-signature API. Upload one PDF and its recipients; Signet distributes it
for signature, tracks who opened, signed or rejected it, seals the completed PDF and serves it.

Errors are \`{error, code, ...extras}\`; branch on \`code\`. Every error also carries \`requestId\`,
the same value as the X-Request-Id response header.

| code | HTTP | meaning |
|---|---|---|
${ERRORS_DOC}

Idempotency: billable operations require an \`Idempotency-Key\` header (1 to 255 characters, scoped
to the customer and mode); every other POST, PUT, PATCH and DELETE accepts one. A retry with the same
key and the same request returns the original response (success or 4xx) byte for byte with
\`Idempotent-Replayed: true\` and repeats no side effect. The same key with a different request is
422 IDEMPOTENCY_KEY_REUSED; while the first request is still running, 409 IDEMPOTENCY_KEY_IN_USE.
5xx responses are not stored: retry them with the same key. Requests rejected before they run
(authentication, validation, rate limit) are not recorded either. Records live 24 hours by default.

Rate limits: each customer may make RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW_MS (default 600 per
minute); every response carries RateLimit-Limit, RateLimit-Remaining and RateLimit-Reset, and a 429
RATE_LIMITED carries Retry-After.

Test mode: keys starting svc_test_ see only test-mode data and are never charged; they count against
the account's sandboxLimit (402 SANDBOX_LIMIT_REACHED past it). The header X-Service-Test-Mode: true
makes a create-and-send free in the same way.

x402 (when the server has it on): a mutating call with no credentials answers 402 PAYMENT_REQUIRED
with a \`PAYMENT-REQUIRED\` header (x402 v2, scheme exact); pay it with a \`PAYMENT-SIGNATURE\` header
(Alt \`x-payment\`), one call one payment, settled before the call's work runs (\`PAYMENT-RESPONSE\`
carries the receipt; a call that then fails is refunded). Priced operations cost their price; a call
that makes a draft (draft: true, sendImmediately: false) and every other mutating route cost an x402
caller X402_MIN_PRICE (default USD 0.001).`;

/** Registers @fastify/swagger; routes with `schema.hide` (operator API, signing pages) stay out. */
export async function registerOpenApi(app: FastifyInstance, opts: { version: string; publicUrl: string }): Promise<void> {
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Signet API', version: 'v1', description: DESCRIPTION, 'x-service-version': opts.version } as never,
      servers: [{ url: opts.publicUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'API key: `Bearer svc_live_<32 hex>` or `Bearer svc_test_<32 hex>`' },
          walletJwt: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Wallet JWT (HS256, 3600 s) from POST /v1/auth/verify' },
          sessionCookie: { type: 'apiKey', in: 'cookie', name: 'svc_session', description: 'The dashboard session (browser only: the products routes and PATCH /v1/account); a POST or PATCH also sends X-CSRF-Token, the dashboard page\'s csrf-token' },
          x402: { type: 'apiKey', in: 'header', name: 'PAYMENT-SIGNATURE', description: 'x402 v2 payment: base64 PaymentPayload (Alt header name x-payment); one call, one payment' },
        },
      },
    },
    transform: (args) => {
      const out = jsonSchemaTransform(args);
      const config = (args.route as RouteOptions).config as { price?: BillableOperation; idempotency?: string } | undefined;
      const schema = out.schema as Record<string, unknown>;
      const notes: string[] = [];
      if (config?.price) notes.push(`Billable: USD ${formatUsd(PRICES[config.price].micros)} per call.`);
      if (config?.idempotency === 'required') notes.push('Requires an Idempotency-Key header.');
      if (notes.length) schema.description = [schema.description, ...notes].filter(Boolean).join('\n\n');
      if (config?.idempotency) {
        schema.headers = {
          type: 'object',
          properties: { 'idempotency-key': { type: 'string', minLength: 1, maxLength: 255, description: 'Idempotency key, scoped to the customer and mode' } },
          ...(config.idempotency === 'required' ? { required: ['idempotency-key'] } : {}),
        };
      }
      return out;
    },
    transformObject: (doc) => polishOpenApi(jsonSchemaTransformObject(doc) as Record<string, unknown>) as never,
  });
}

/** Collects the route table that llms.txt is generated from, the same table the OpenAPI is built from. */
export function collectRoutes(app: FastifyInstance): RouteEntry[] {
  const table: RouteEntry[] = [];
  app.addHook('onRoute', (route) => {
    const schema = route.schema as { hide?: boolean; summary?: string } | undefined;
    if (schema?.hide || !schema?.summary) return;
    for (const method of [route.method].flat()) {
      if (method === 'HEAD') continue;
      table.push({ method, url: route.url, summary: schema.summary, auth: route.config?.auth ?? 'none', price: route.config?.price, idempotency: route.config?.idempotency });
    }
  });
  return table;
}

export function renderLlmsTxt(routes: RouteEntry[], opts: { publicUrl: string }): string {
  const priced = Object.values(PRICES)
    .map((p) => `- ${p.label}: USD ${formatUsd(p.micros)}`)
    .join('\n');
  const lines = routes
    .map((r) => {
      const notes = [r.auth === 'customer' ? 'auth' : r.auth === 'optional' ? 'auth optional' : 'no auth', r.price ? `USD ${formatUsd(PRICES[r.price].micros)}` : '', r.idempotency === 'required' ? 'Idempotency-Key required' : '']
        .filter(Boolean)
        .join(', ');
      return `- ${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}: ${r.summary} (${notes})`;
    })
    .join('\n');
  return `# Signet

> Self-hostable electronic-signature API. Upload a PDF and its recipients; Signet sends it for
> signature, tracks who opened, signed or rejected it, seals the completed PDF with a digital signature
> and an audit certificate, and serves it.

Base URL: ${opts.publicUrl}
OpenAPI 3.1: ${opts.publicUrl}/openapi.json

## Authentication
- API key: \`Authorization: Bearer svc_live_<32 hex>\` (test keys \`svc_test_…\` see only test data and are never charged)
- Wallet JWT: \`Authorization: Bearer <JWT>\` from GET /v1/auth/challenge then POST /v1/auth/verify
- x402: header \`PAYMENT-SIGNATURE\` (Alt \`x-payment\`) with a v2 PaymentPayload; one call, one payment

## Prices (no subscription; each billable call is charged to the caller's balance)
${priced}

x402 callers pay each call on-chain: the price above, and X402_MIN_PRICE (default USD 0.001) for a call
that makes a draft and on every other mutating route. A call with no credentials answers 402 with the
PAYMENT-REQUIRED header to pay.

## Conventions
- Errors: \`{error, code, ...extras}\`; branch on \`code\`.
- Billable calls require an \`Idempotency-Key\` header; a retry with the same key returns the original response.
- Lists take \`limit\` (1..100, default 20) and \`offset\`, or \`page\` and \`perPage\`.

## Routes
${lines}
`;
}
