import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import type { RequestContext } from '../../context.js';
import type { Db } from '../../db/client.js';
import { AppError } from '../../errors.js';
import { errorBody, toAppError } from '../../http/errors.js';
import { KEY_NAMESPACES } from '../../http/idempotency.js';
import type { Idempotency, PaymentGate, Reservation } from '../../http/idempotency-core.js';
import type { IdempotencyRow, StoredResponse } from '../../http/idempotency.repo.js';
import { sha256Hex } from '../../lib/crypto.js';
import { inlineBudget, type InlineBudget } from './inline-budget.js';
import { JsonTransport } from './json-transport.js';
import type { ToolContext, ToolDefinition } from './tool.js';

const JSON_TYPE = { 'content-type': 'application/json; charset=utf-8' };
/** JSON-RPC messages one POST /mcp may carry (the SDK alone allows 100): a batch costs its tools/calls, not one request. */
export const MCP_MAX_BATCH = 10;

const INSTRUCTIONS = `Signet is an e-signature service: upload a PDF with its recipients, track who signed, download the sealed PDF.
Billable tools (their descriptions say what they cost) require idempotencyKey: pick a fresh unique value per intended action and reuse it only to retry that same action; a retry returns the first answer and charges nothing again.
A failed call is a result with isError true and structuredContent {code, error, ...}; branch on code.
A JSON-RPC batch holds at most ${MCP_MAX_BATCH} messages, and each tools/call in it counts against the rate limit.`;

/** One HTTP request to POST /mcp, as its tools see it. */
export type McpCall = {
  /** Who calls; undefined for a caller with no credentials, who may only discover (initialize, tools/list, ping). */
  ctx: RequestContext | undefined;
  /** The x402 payment of this request's one tools/call (verified already), settled and counted by that call's mutate. */
  payment?: PaymentGate;
  /** Headers for the HTTP answer (PAYMENT-RESPONSE), set before the transport writes it. */
  onReceipt(headers: Record<string, string>): void;
  log: { error(obj: object, msg: string): void; warn(obj: object, msg: string): void };
};

/** Servers kept between requests (each serves one request at a time): about the peak of concurrent POST /mcp. */
const IDLE_SERVERS = 16;

/** Where a request's McpCall rides to its tools: the SDK hands a message's AuthInfo to the handler of that message. */
const CALL_KEY = 'signetCall';
type Bound = { call: McpCall; inline: InlineBudget };
const boundOf = (authInfo: AuthInfo | undefined): Bound | undefined => authInfo?.extra?.[CALL_KEY] as Bound | undefined;
/** A message with no call bound (none of this endpoint's requests): no caller, so its tools/call is refused. */
const NO_CALL: Bound = { call: { ctx: undefined, onReceipt: () => undefined, log: { error: () => undefined, warn: () => undefined } }, inline: inlineBudget(0) };

type Registered = { tool: ToolDefinition; input: z.ZodObject; output: z.ZodObject; advertised: z.ZodObject };

/**
 * What the SDK advertises and its client checks against: the tool's output with every field optional,
 * plus {code, error} and room for an error's extras. The SDK client validates structuredContent against
 * the output schema even on an isError result, so the schema must admit the error shape; the server
 * side checks a success against the tool's exact output itself (`output`).
 */
function advertisedOutput(shape: z.ZodRawShape): z.ZodObject {
  const fields: Record<string, z.ZodType> = Object.fromEntries(Object.entries(shape).map(([k, s]) => [k, (s as z.ZodType).optional()]));
  fields.code = (shape.code ? z.union([shape.code as z.ZodType, z.string()]) : z.string()).optional().describe('Only on a failure (isError: true): the error code, as on REST');
  fields.error = (shape.error ? z.union([shape.error as z.ZodType, z.string()]) : z.string()).optional().describe('Only on a failure (isError: true): what went wrong');
  return z.looseObject(fields).describe('On success the tool\'s fields; on a failure (isError: true) {code, error, ...extras} as REST\'s error body');
}

const annotationsOf = (tool: ToolDefinition) => ({ readOnlyHint: !tool.mutates, openWorldHint: false });

/** Canonical JSON (keys sorted) of a tool's arguments: the same arguments in another key order are the same call. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value).sort().filter((k) => (value as Record<string, unknown>)[k] !== undefined).map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/**
 * The tools over the per-request McpServer of the stateless endpoint, and the runner of a tools/call:
 * the idempotency key reserved before the tool runs (a replay runs nothing, not even the tool's planning
 * or affordability check), the tool's `mutate` committed through the same idempotency core as REST's
 * commitMutation, and any failure rendered as an isError result with REST's {code, error, ...}.
 */
export function createMcpEndpoint(deps: { db: Db; idempotency: Idempotency; tools: ToolDefinition[]; version: string; inlineMaxBytes: number }) {
  const registered = new Map<string, Registered>();
  for (const tool of deps.tools) {
    if (registered.has(tool.name)) throw new Error(`MCP tool ${tool.name} is defined twice`);
    if (tool.price && !tool.input.idempotencyKey) throw new Error(`MCP tool ${tool.name} is billable and must take idempotencyKey`);
    registered.set(tool.name, { tool, input: z.object(tool.input), output: z.object(tool.output), advertised: advertisedOutput(tool.output) });
  }

  // tools/list is the same for every request: its JSON Schemas are built once, not per request (the SDK
  // would convert every schema on every call, ~100 ms of CPU for this table).
  let listed: Tool[] | undefined;
  const toolList = (): Tool[] =>
    (listed ??= [...registered.values()].map((r) => ({
      name: r.tool.name,
      title: r.tool.title,
      description: r.tool.description,
      inputSchema: z.toJSONSchema(r.input, { target: 'draft-7', io: 'input' }) as Tool['inputSchema'],
      outputSchema: z.toJSONSchema(r.advertised, { target: 'draft-7', io: 'output' }) as Tool['outputSchema'],
      annotations: annotationsOf(r.tool),
      execution: { taskSupport: 'forbidden' },
    })));

  const success = (r: Registered, value: unknown, replayed: boolean): CallToolResult => {
    // Parsed as REST's serializer parses a response: the declared fields, nothing else.
    const out = r.output.parse(value);
    return { content: [{ type: 'text', text: r.tool.text(out as never) }], structuredContent: out, ...(replayed ? { _meta: { idempotentReplayed: true } } : {}) };
  };

  const failure = (content: Record<string, unknown>): CallToolResult => ({
    content: [{ type: 'text', text: `Error ${String(content.code)}: ${String(content.error)}\n${JSON.stringify(content)}` }],
    structuredContent: content,
    isError: true,
  });

  /** A finished record: the stored answer, success or 4xx, exactly as the first call gave it. */
  const replay = (r: Registered, row: IdempotencyRow): CallToolResult => {
    const body = JSON.parse(row.responseBody ?? 'null');
    return (row.responseStatus ?? 500) >= 400 ? { ...failure(body), _meta: { idempotentReplayed: true } } : success(r, body, true);
  };

  async function runTool(r: Registered, args: Record<string, unknown>, call: McpCall, inline: InlineBudget): Promise<CallToolResult> {
    const { tool } = r;
    const { ctx } = call;
    let reservation: Reservation | undefined;
    try {
      // The endpoint lets a caller without credentials reach only discovery; this is the belt to its braces.
      if (!ctx) throw new AppError('UNAUTHORIZED', 'Authentication required: send Authorization: Bearer <API key or wallet JWT>');
      const key = args.idempotencyKey;
      if (tool.mutates && typeof key === 'string') {
        const { idempotencyKey: _key, ...rest } = args;
        const fingerprint = sha256Hex(`${tool.name}\n${canonical(rest)}${ctx.testModeHeader ? '\ntest-mode' : ''}`);
        const outcome = await deps.idempotency.reserve({ customerId: ctx.actor.customerId, mode: ctx.actor.mode, key: KEY_NAMESPACES.mcp + key }, fingerprint);
        if (outcome.kind === 'replay') return replay(r, outcome.row);
        reservation = outcome.reservation;
      } else if (tool.price) {
        throw new AppError('IDEMPOTENCY_KEY_REQUIRED', `${tool.name} is billable and requires idempotencyKey`);
      }

      let committed: { value: unknown } | undefined;
      const tc: ToolContext = {
        ctx,
        db: deps.db,
        inline,
        mutate: async (work) => {
          if (committed) throw new Error(`MCP tool ${tool.name} called mutate twice: one call is one transaction`);
          const done = await deps.idempotency.commit({ reservation, payment: call.payment }, async (tx) => {
            const value = await work(tx);
            return { value, response: { status: 200, headers: JSON_TYPE, body: JSON.stringify(value) } satisfies StoredResponse };
          });
          // Finished in the transaction that committed: nothing is left to settle on a later failure.
          reservation = undefined;
          committed = { value: done.value };
          call.onReceipt(done.receipt);
          return done.value;
        },
      };
      const output = await tool.run(tc, args as never);
      if (committed && output !== committed.value) {
        // The stored answer is what mutate returned: a replay would answer something else than this call.
        throw new Error(`MCP tool ${tool.name} must return what its mutate returns (shape the result inside the work)`);
      }
      if (reservation) {
        // Nothing changed (the tool returned without mutating): the key is free again, as after a 5xx.
        await deps.idempotency.settleFailure(reservation, 500, { status: 500, headers: JSON_TYPE, body: '' }, call.log);
      }
      return success(r, output, false);
    } catch (err) {
      const appErr = toAppError(err);
      if (appErr.code === 'INTERNAL_ERROR') call.log.error({ err, tool: tool.name }, 'MCP tool failed');
      else if (appErr.status >= 500) call.log.warn({ err, code: appErr.code, tool: tool.name }, 'MCP tool upstream error');
      const content = errorBody(appErr, ctx?.requestId);
      if (reservation) await deps.idempotency.settleFailure(reservation, appErr.status, { status: appErr.status, headers: JSON_TYPE, body: JSON.stringify(content) }, call.log);
      return failure(content);
    }
  }

  // The SDK loads on the first POST /mcp, not at start: most installations never take one, and its
  // modules (with Ajv) held some 7 MiB of heap at idle (issue 38). The SDK builds an Ajv instance per
  // server unless given one; one validator (and its compiled schemas) serves every server.
  let loading: ReturnType<typeof loadSdk> | undefined;
  const sdk = () => (loading ??= loadSdk());

  /**
   * A server with every tool registered. Nothing in it belongs to a request: a tool finds its caller in
   * the AuthInfo of the message it answers (`authInfo`), so a server can serve one request after another.
   */
  async function newServer(): Promise<McpServer> {
    const { McpServer, ListToolsRequestSchema, jsonSchemaValidator } = await sdk();
    const server = new McpServer({ name: 'Signet', version: deps.version }, { capabilities: { tools: {} }, instructions: INSTRUCTIONS, jsonSchemaValidator });
    for (const r of registered.values()) {
      server.registerTool(
        r.tool.name,
        { title: r.tool.title, description: r.tool.description, inputSchema: r.input, outputSchema: r.advertised, annotations: annotationsOf(r.tool) },
        (args: Record<string, unknown>, extra: { authInfo?: AuthInfo }) => {
          const { call, inline } = boundOf(extra.authInfo) ?? NO_CALL;
          return runTool(r, args, call, inline);
        },
      );
    }
    server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: toolList() }));
    return server;
  }

  // Building a server and registering every tool cost each tools/call about 0.05 ms of CPU (issue 38):
  // servers are kept, each connected to its own transport for good, and take one request at a time (the
  // SDK's Protocol keys in-flight requests by JSON-RPC id, which two clients may share), so concurrent
  // requests take several.
  const idle: { server: McpServer; transport: JsonTransport }[] = [];
  async function connected(): Promise<{ server: McpServer; transport: JsonTransport }> {
    const server = await newServer();
    const transport = new JsonTransport((await sdk()).types);
    await server.connect(transport);
    return { server, transport };
  }

  /** The AuthInfo that carries `call` (and its request's inline budget) to the tools of the messages it comes with. */
  const authInfo = (call: McpCall): AuthInfo => {
    const bound: Bound = { call, inline: inlineBudget(deps.inlineMaxBytes) };
    return { token: '', clientId: call.ctx?.actor.customerId ?? '', scopes: [], extra: { [CALL_KEY]: bound } };
  };

  return {
    tool: (name: string): ToolDefinition | undefined => registered.get(name)?.tool,

    /** A server with every tool, for a transport of the caller's (tests): its tools find their caller through `authInfo`. */
    server: newServer,

    authInfo,

    /**
     * Answers one stateless POST /mcp (JSON answers, no session) on a kept server. It resolves once every
     * message of the request is answered: no handler of the request is still running when the server goes
     * back to the pool. A server whose request failed is not reused.
     */
    async handle(req: IncomingMessage, res: ServerResponse, body: unknown, call: McpCall): Promise<void> {
      const pair = idle.pop() ?? (await connected());
      await pair.transport.handle(req.headers, res, body, authInfo(call));
      if (idle.length < IDLE_SERVERS) idle.push(pair);
    },
  };
}

export type McpEndpoint = ReturnType<typeof createMcpEndpoint>;

async function loadSdk() {
  const [{ McpServer }, types, { AjvJsonSchemaValidator }] = await Promise.all([
    import('@modelcontextprotocol/sdk/server/mcp.js'),
    import('@modelcontextprotocol/sdk/types.js'),
    import('@modelcontextprotocol/sdk/validation/ajv'),
  ]);
  return { McpServer, types, ListToolsRequestSchema: types.ListToolsRequestSchema, jsonSchemaValidator: new AjvJsonSchemaValidator() };
}
