import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { RequestContext } from '../../context.js';
import { AppError } from '../../errors.js';
import { testModeRequested } from '../../http/auth.js';
import type { PaymentGate } from '../../http/idempotency.js';
import type { X402CallPricing } from '../x402/x402-resolver.js';
import { MCP_MAX_BATCH, type McpEndpoint } from './mcp-server.js';
import type { ToolDefinition } from './tool.js';

export type McpRouteDeps = {
  enabled: boolean;
  endpoint: McpEndpoint;
  pricing: X402CallPricing;
  /** Room for create_envelope's base64 PDF (MAX_PDF_BYTES once decoded) and the rest of the call. */
  bodyLimit: number;
};

type RpcMessage = { method?: unknown; params?: { name?: unknown; arguments?: unknown } };
type ToolCall = { name: string; args: Record<string, unknown> };

function refuseLargeBatch(body: unknown): void {
  if (Array.isArray(body) && body.length > MCP_MAX_BATCH) {
    throw new AppError('MCP_BATCH_TOO_LARGE', `A JSON-RPC batch holds at most ${MCP_MAX_BATCH} messages; this one holds ${body.length}: send them in several requests`, { maxBatch: MCP_MAX_BATCH });
  }
}

/** The tools/call requests in a JSON-RPC body (one message or a batch): each tool's name and its arguments as sent. */
function toolCallsOf(body: unknown): ToolCall[] {
  const messages = (Array.isArray(body) ? body : [body]) as unknown[];
  return messages
    .filter((m): m is RpcMessage => typeof m === 'object' && m !== null && (m as RpcMessage).method === 'tools/call')
    .map((m) => ({ name: typeof m.params?.name === 'string' ? m.params.name : '', args: typeof m.params?.arguments === 'object' && m.params.arguments !== null ? (m.params.arguments as Record<string, unknown>) : {} }));
}

const pricedCall = (tool: ToolDefinition, args: Record<string, unknown>) => ({ operation: tool.x402Price ? tool.x402Price(args) : tool.price, description: `MCP tools/call ${tool.name}` });
const paidByX402 = (tool: ToolDefinition) => tool.price !== undefined || tool.mutates;

/**
 * POST /mcp: MCP's Streamable HTTP, stateless (DESIGN §2): a kept McpServer and its transport
 * (json-transport.ts) per request, JSON answers, no sessions, so any node answers any request. GET
 * and DELETE (the SSE stream and session end, which a stateless server has none of) answer 405 with
 * Allow: POST from the app's not-found handler. Outside /v1 and out of the REST OpenAPI (it is JSON-RPC, described by tools/list,
 * /.well-known/mcp.json and /llms.txt).
 *
 * Authentication is REST's resolver chain with one difference (`pricedBy: 'handler'`): what a call
 * costs is the tool's price, known only once the body is read, so a request without a bearer
 * credential reaches this handler, which refuses it (401), asks for the tool's payment (402), or lets
 * a would-be x402 payer discover the tools (initialize, tools/list, ping) while x402 is on.
 */
export function mcpRoutes(deps: McpRouteDeps) {
  return async function (app: FastifyInstance): Promise<void> {
    // The app's own rate limit (same store, same per-customer key): the request counted one unit on its
    // way in; each further tools/call of a batch counts one more (DESIGN §4.19). The headers are the
    // draft-spec names app.ts has the plugin send.
    const countUnit = app.createRateLimit();
    async function countToolCalls(request: FastifyRequest, reply: FastifyReply, calls: number): Promise<void> {
      for (let i = 1; i < calls; i++) {
        const limit = await countUnit(request);
        if (limit.isAllowed) return;
        reply.header('ratelimit-remaining', limit.remaining).header('ratelimit-reset', limit.ttlInSeconds);
        if (limit.isExceeded) {
          throw new AppError('RATE_LIMITED', `Rate limit exceeded: each tools/call of a batch counts as one request; retry in ${limit.ttlInSeconds} s`, { retryAfterSeconds: limit.ttlInSeconds }, { 'Retry-After': String(limit.ttlInSeconds) });
        }
      }
    }

    /** Who calls, and the x402 payment of the request's one tools/call; throws the HTTP refusal. */
    async function authorize(request: FastifyRequest, calls: ToolCall[]): Promise<{ ctx: RequestContext | undefined; payment?: PaymentGate }> {
      const actor = request.actor;
      const only = calls.length === 1 ? deps.endpoint.tool(calls[0].name) : undefined;
      const base = { requestId: request.id, ip: request.ip, testModeHeader: testModeRequested(request) };
      if (actor) return { ctx: { actor, ...base } };
      if (!deps.pricing.paying(request)) {
        if (deps.pricing.enabled && calls.length === 0) return { ctx: undefined };
        if (only && paidByX402(only)) {
          const offer = await deps.pricing.required(request, pricedCall(only, calls[0].args));
          if (offer) throw offer;
        }
        throw new AppError('UNAUTHORIZED', 'Authentication required: send Authorization: Bearer <API key or wallet JWT>' + (deps.pricing.enabled ? ', or pay one billable or mutating tools/call per request with x402' : ''));
      }
      // Discovery, or a tool the SDK will answer as unknown: nothing to pay for, nobody to be.
      if (calls.length === 0 || (calls.length === 1 && !only)) return { ctx: undefined };
      if (calls.length > 1) throw new AppError('X402_NOT_APPLICABLE', 'One x402 payment pays one tools/call: send each paid tools/call in its own request');
      if (!paidByX402(only!)) {
        throw new AppError('X402_NOT_APPLICABLE', `${only!.name} only reads: x402 pays for billable and mutating tools; reads take an API key or a wallet JWT`);
      }
      // Verified (and its payer made a customer) before the tool runs anything.
      const bound = await deps.pricing.bind(request, pricedCall(only!, calls[0].args));
      return { ctx: { actor: bound.actor, ...base }, payment: bound.gate };
    }

    app.post('/mcp', {
      // Off: no authentication at all, the 503 says why.
      config: deps.enabled ? { auth: 'customer', pricedBy: 'handler', idempotency: 'handler' } : {},
      bodyLimit: deps.bodyLimit,
      schema: { hide: true },
      handler: async (request, reply) => {
        if (!deps.enabled) throw new AppError('MCP_DISABLED', 'The MCP endpoint is switched off on this server (MCP_ENABLED=false); use the REST API under /v1');
        const calls = toolCallsOf(request.body);
        const { ctx, payment } = await authorize(request, calls);
        refuseLargeBatch(request.body);
        await countToolCalls(request, reply, calls.length);

        // From here the MCP transport writes the answer; the headers Fastify would have sent go first.
        reply.hijack();
        const raw = reply.raw;
        for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) raw.setHeader(name, value);
        raw.setHeader('x-request-id', request.id);
        try {
          await deps.endpoint.handle(request.raw, raw, request.body, {
            ctx,
            payment,
            // The receipt of a settled payment: the transport has not written the answer yet (it waits for every response).
            onReceipt: (headers) => {
              if (!raw.headersSent) for (const [name, value] of Object.entries(headers)) raw.setHeader(name, value);
            },
            log: request.log,
          });
        } catch (err) {
          // Hijacked: Fastify's error handler cannot answer any more, so this does, without details.
          request.log.error({ err }, 'MCP transport failed');
          if (!raw.headersSent) {
            raw.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
            raw.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } }));
          }
        }
      },
    });
  };
}
