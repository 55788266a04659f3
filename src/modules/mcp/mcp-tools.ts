import type { ToolDefinition } from './tool.js';
import { accountTools, type AccountToolDeps } from './tools/account.tools.js';
import { envelopeTools, type EnvelopeToolDeps } from './tools/envelopes.tools.js';
import { templateTools, type TemplateToolDeps } from './tools/templates.tools.js';
import { verificationTools, type VerificationToolDeps } from './tools/verifications.tools.js';
import { webhookTools, type WebhookToolDeps } from './tools/webhooks.tools.js';

export type McpToolDeps = EnvelopeToolDeps & TemplateToolDeps & WebhookToolDeps & VerificationToolDeps & AccountToolDeps;

/** Every MCP tool (DESIGN §5), in one list: POST /mcp serves it, /.well-known/mcp.json and /llms.txt name it. */
export function mcpTools(deps: McpToolDeps): ToolDefinition[] {
  return [...envelopeTools(deps), ...templateTools(deps), ...webhookTools(deps), ...verificationTools(deps), ...accountTools(deps)];
}
