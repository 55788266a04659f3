import { z } from 'zod';
import { formatUsd } from '../../lib/money.js';
import { PRICES } from '../../lib/prices.js';
import type { ToolDefinition } from '../mcp/tool.js';

/** What discovery needs of a tool: the same ToolDefinition objects POST /mcp serves, never a copy of their names. */
export type McpToolInfo = Pick<ToolDefinition, 'name' | 'title' | 'description' | 'price' | 'mutates'>;

export type McpDiscovery = {
  enabled: boolean;
  tools: readonly McpToolInfo[];
  /** x402 on: its network and the price of an unpriced mutation. */
  x402?: { network: string; minPriceMicros: bigint };
  /** Messages per JSON-RPC batch; PDF bytes one answer inlines (MCP_INLINE_MAX_BYTES). */
  limits: { maxBatch: number; inlineMaxBytes: number };
};

const ZAuthMode = z.object({
  type: z.enum(['api_key', 'wallet_jwt', 'x402']),
  header: z.string().describe('The request header that carries it'),
  format: z.string(),
  description: z.string(),
});

export const ZMcpManifest = z
  .object({
    name: z.string(),
    version: z.literal('1.0.0'),
    description: z.string(),
    mcpUrl: z.string().describe('POST JSON-RPC here (Streamable HTTP, stateless; send Accept: application/json, text/event-stream)'),
    transport: z.literal('streamable-http'),
    pricing: z.object({ per_envelope_cents: z.number().int(), currency: z.literal('USD') }),
    auth: z.array(ZAuthMode).describe('Accepted credentials; x402 is listed only when the server has it on'),
    tools: z.array(
      z.object({
        name: z.string(),
        title: z.string(),
        priceCents: z.number().int().nullable().describe('What a call costs in USD cents; null: free (x402 callers pay the minimum price for a mutation)'),
        mutates: z.boolean(),
      }),
    ),
  })
  .meta({ id: 'McpManifest' });
export type TMcpManifest = z.infer<typeof ZMcpManifest>;

const DESCRIPTION = 'Signet e-signature service for AI agents: create, send, track, remind, cancel and download envelopes, use templates, run identity verifications and register webhooks through MCP tool calls, charged exactly as the REST API charges.';
const cents = (micros: bigint) => Number(micros / 10_000n);

export function mcpManifest(mcp: McpDiscovery, opts: { publicUrl: string }): TMcpManifest {
  const auth: TMcpManifest['auth'] = [
    { type: 'api_key', header: 'Authorization', format: 'Bearer svc_live_<32 hex>', description: 'An API key; svc_test_ keys act in test mode, never charged' },
    { type: 'wallet_jwt', header: 'Authorization', format: 'Bearer <JWT>', description: `A wallet JWT from GET ${opts.publicUrl}/v1/auth/challenge then POST ${opts.publicUrl}/v1/auth/verify (sign-in with Ethereum)` },
  ];
  if (mcp.x402) {
    auth.push({
      type: 'x402',
      header: 'PAYMENT-SIGNATURE',
      format: 'base64 x402 v2 PaymentPayload (Alt header x-payment)',
      description: `No account: a billable tools/call without credentials answers HTTP 402 with PAYMENT-REQUIRED for that tool's price on ${mcp.x402.network}; send the same request again with PAYMENT-SIGNATURE. Other mutating tools cost USD ${formatUsd(mcp.x402.minPriceMicros)}; read tools need an API key or a wallet JWT.`,
    });
  }
  return {
    name: 'Signet',
    version: '1.0.0',
    description: DESCRIPTION,
    mcpUrl: `${opts.publicUrl}/mcp`,
    transport: 'streamable-http',
    pricing: { per_envelope_cents: cents(PRICES.envelope_create.micros), currency: 'USD' },
    auth,
    tools: mcp.tools.map((t) => ({ name: t.name, title: t.title, priceCents: t.price ? cents(PRICES[t.price].micros) : null, mutates: t.mutates })),
  };
}

/** A tool's first sentence: its description is written for a model and runs on. */
const firstSentence = (text: string) => /^[\s\S]*?[.!?](?=\s|$)/.exec(text.trim())?.[0] ?? text.trim().split('\n')[0];

/** The MCP part of /llms.txt, from the same tool definitions POST /mcp serves. */
export function renderMcpLlms(mcp: McpDiscovery, opts: { publicUrl: string }): string {
  const tools = mcp.tools
    .map((t) => {
      const notes = [t.price ? `USD ${formatUsd(PRICES[t.price].micros)}, idempotencyKey required` : 'free', !t.price && t.mutates ? 'changes state' : ''].filter(Boolean).join(', ');
      return `- ${t.name}: ${firstSentence(t.description)} (${notes})`;
    })
    .join('\n');
  const x402 = mcp.x402
    ? `- x402: no credentials; a billable tools/call answers HTTP 402 with PAYMENT-REQUIRED for that tool's price; repeat the same request with PAYMENT-SIGNATURE (the answer carries PAYMENT-RESPONSE). Unpriced mutating tools cost USD ${formatUsd(mcp.x402.minPriceMicros)}; read tools need a key or a JWT.`
    : '- x402: off on this server';
  return `## MCP (for AI agents)
Endpoint: POST ${opts.publicUrl}/mcp (JSON-RPC 2.0, MCP Streamable HTTP, stateless; send \`Accept: application/json, text/event-stream\`)
Manifest: ${opts.publicUrl}/.well-known/mcp.json
Methods: initialize, tools/list, tools/call, ping. A tool's failure is a result with isError: true and {code, error} as on REST.
Limits: a JSON-RPC batch holds at most ${mcp.limits.maxBatch} messages (more: HTTP 400 MCP_BATCH_TOO_LARGE), and each tools/call in it counts against the rate limit. One answer inlines at most ${mcp.limits.inlineMaxBytes} bytes of PDF, a batch included; past that, download_envelope answers downloadUrl only: GET it with the same Authorization header.
Auth, as on REST:
- \`Authorization: Bearer <API key>\` or \`Authorization: Bearer <wallet JWT>\`
${x402}

### Tools
${tools}
`;
}
