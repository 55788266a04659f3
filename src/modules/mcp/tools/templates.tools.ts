import { z } from 'zod';
import { PRICES } from '../../../lib/prices.js';
import { formatUsd } from '../../../lib/money.js';
import { ZEnvelope } from '../../envelopes/envelopes.schemas.js';
import { ZFromTemplate, ZTemplate, ZTemplateSummary } from '../../templates/templates.schemas.js';
import type { TemplatesService } from '../../templates/templates.service.js';
import { defineTool, type ToolDefinition } from '../tool.js';
import { ZIdempotencyKey, countText, pageOf, pageOutput, pagingInput, toPaging } from './tool-shapes.js';

export type TemplateToolDeps = { templates: Pick<TemplatesService, 'list' | 'get' | 'planEnvelope' | 'createEnvelope' | 'commitPlanned'> };

const usd = (op: keyof typeof PRICES) => `USD ${formatUsd(PRICES[op].micros)}`;
const ZTemplateId = z.string().min(1).max(100).describe('The templateId (a UUID) from list_templates');

/** Templates as MCP tools: the same service calls, charges and audit rows as /v1/templates. */
export function templateTools(deps: TemplateToolDeps): ToolDefinition[] {
  const { templates } = deps;
  return [
    defineTool({
      name: 'list_templates',
      title: 'List templates',
      description:
        'Lists your saved templates, newest first. Each has its templateId, title, recipient slots (slot id, placeholder email and name, role, signingOrder, verificationRequired, locale) and default meta; get_template adds the fields. Free. Errors: VALIDATION_ERROR (bad paging).',
      input: { ...pagingInput },
      output: pageOutput(ZTemplateSummary),
      mutates: false,
      async run(tc, args) {
        const paging = toPaging(args);
        return pageOf(paging, await templates.list(tc.db, tc.ctx, paging));
      },
      text: (p) => [`Templates ${countText(p)}`, ...p.data.map((t) => `- ${t.templateId} "${t.title}": ${t.recipients.length} slot(s)`)].join('\n'),
    }),

    defineTool({
      name: 'get_template',
      title: 'Get a template',
      description:
        "One template with its recipient slots and fields. A slot's `id` is what create_envelope_from_template maps a person to. Free. Errors: INVALID_ID (not a UUID), TEMPLATE_NOT_FOUND (no such template among yours).",
      input: { templateId: ZTemplateId },
      output: ZTemplate.shape,
      mutates: false,
      run: (tc, args) => templates.get(tc.db, tc.ctx, args.templateId),
      text: (t) =>
        [`Template ${t.templateId} "${t.title}", ${t.fields.length} field(s). Slots:`, ...t.recipients.map((s) => `- slot ${s.id}: ${s.role} "${s.name}" <${s.email}>${s.verificationRequired ? ', verification required' : ''}${s.locale ? `, language ${s.locale}` : ''}`)].join('\n'),
    }),

    defineTool({
      name: 'create_envelope_from_template',
      title: 'Create an envelope from a template',
      description: `Creates an envelope from one of your templates and, by default, sends it for signature. \`recipients\` maps one real person to each slot of the template: [{id: the slot id from get_template, email, name, locale?}], every slot exactly once (locale: their language, en, de, fr, es, pt, pl, zh-CN or ar; absent: the slot's, else the account's default). Role, signing order, language and identity-verification gates come from the slot; the PDF and fields from the template; \`meta\` overrides the template's meta key by key.
Cost: sendImmediately true (default) answers status PENDING and charges ${usd('envelope_from_template')} (plus ${usd('verification_create')} per slot with verificationRequired); false answers a DRAFT, free until send_envelope (${usd('envelope_send')}; an x402 payer pays the minimum price for the draft). Test-mode keys are never charged.
Requires idempotencyKey: a retry with the same key and arguments returns the same envelope and charges once.
Errors: INVALID_TEMPLATE_ID (not a UUID), TEMPLATE_NOT_FOUND, INVALID_TEMPLATE_RECIPIENT_ID (an id that is not a slot), RECIPIENT_NOT_FOUND (a slot left unmapped; slotId names it), VALIDATION_ERROR (a slot mapped twice, a duplicate email, bad dates), INSUFFICIENT_BALANCE, SANDBOX_LIMIT_REACHED, X402_NOT_APPLICABLE (verification gates paid by x402), IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_KEY_IN_USE.`,
      input: { templateId: ZTemplateId, ...ZFromTemplate.shape, sendImmediately: ZFromTemplate.shape.sendImmediately.describe('false: keep a DRAFT, free until send_envelope'), idempotencyKey: ZIdempotencyKey },
      output: ZEnvelope.shape,
      price: 'envelope_from_template',
      x402Price: (args) => (args.sendImmediately === false ? undefined : 'envelope_from_template'),
      mutates: true,
      async run(tc, args) {
        const { templateId, idempotencyKey: _key, ...input } = args;
        // As the REST route: planned (checks, balance, the stored PDF) before the idempotent transaction.
        const plan = await templates.planEnvelope(tc.db, tc.ctx, templateId, input);
        return templates.commitPlanned(tc.db, plan, () => tc.mutate((tx) => templates.createEnvelope(tx, tc.ctx, plan)));
      },
      text: (e) => `Envelope ${e.envelopeId} "${e.title ?? ''}" is ${e.status}; recipients: ${e.recipients.map((r) => r.email).join(', ')}`,
    }),
  ];
}
