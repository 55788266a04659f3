import { z } from 'zod';
import { PRICES } from '../../../lib/prices.js';
import { formatUsd } from '../../../lib/money.js';
import { ZCreateVerification, ZVerification } from '../../verifications/verifications.schemas.js';
import type { VerificationsService } from '../../verifications/verifications.service.js';
import { defineTool, type ToolDefinition } from '../tool.js';
import { ZIdempotencyKey } from './tool-shapes.js';

export type VerificationToolDeps = { verifications: Pick<VerificationsService, 'prepareCreate' | 'create' | 'liveStatus'> };

const render = (v: z.infer<typeof ZVerification>) =>
  `Verification ${v.verificationId} (${v.type}) of ${v.email} is ${v.status}${v.verificationUrl && v.status === 'pending' ? `; the person verifies at ${v.verificationUrl}` : ''}`;

/** Identity verifications as MCP tools: the same service calls, charge and audit rows as /v1/verifications. */
export function verificationTools(deps: VerificationToolDeps): ToolDefinition[] {
  const { verifications } = deps;
  return [
    defineTool({
      name: 'create_verification',
      title: 'Start an identity verification',
      description: `Starts an identity verification of a person and answers its verificationUrl, which you send to them. type email: they open our page, ask for a 6-digit code sent to the address and enter it (5 wrong codes fail it; it expires after 24 hours). type id_document: Stripe Identity's hosted page checks an identity document (expires after 48 hours; only when the server has Stripe configured). Follow it with get_verification_status.
Cost: USD ${formatUsd(PRICES.verification_create.micros)} per verification (test-mode keys are never charged). Requires idempotencyKey: a retry with the same key and arguments returns the same verification and charges once.
Errors: VALIDATION_ERROR, ID_VERIFICATION_NOT_CONFIGURED (id_document without Stripe), IDENTITY_PROVIDER_UNAVAILABLE (Stripe unreachable; nothing charged), INSUFFICIENT_BALANCE, SANDBOX_LIMIT_REACHED, IDEMPOTENCY_KEY_REUSED, IDEMPOTENCY_KEY_IN_USE.`,
      input: { ...ZCreateVerification.shape, idempotencyKey: ZIdempotencyKey },
      output: ZVerification.shape,
      price: 'verification_create',
      mutates: true,
      async run(tc, args) {
        const { idempotencyKey: _key, ...input } = args;
        // As the REST route: cheap refusals and the provider's session before the idempotent transaction.
        const prepared = await verifications.prepareCreate(tc.ctx, input);
        return tc.mutate((tx) => verifications.create(tx, tc.ctx, prepared));
      },
      text: render,
    }),

    defineTool({
      name: 'get_verification_status',
      title: 'Get the live status of a verification',
      description:
        'The live status of a verification: pending, verified, failed (too many wrong codes), expired or canceled. While it can still change the provider is asked, and the stored copy corrected to match. Free. Errors: VERIFICATION_NOT_FOUND (no such verification among yours), IDENTITY_PROVIDER_UNAVAILABLE (Stripe unreachable; retry).',
      input: { verificationId: z.string().min(1).max(100).describe('The verificationId (a UUID) from create_verification') },
      output: ZVerification.shape,
      mutates: false,
      run: (tc, args) => verifications.liveStatus(tc.db, tc.ctx, args.verificationId),
      text: render,
    }),
  ];
}
