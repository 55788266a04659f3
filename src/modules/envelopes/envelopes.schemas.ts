import { z } from 'zod';
import { ENVELOPE_STATUSES, ROLES } from '../../engine/engine.js';
import { LOCALES } from '../../i18n/locales.js';
import { FIELD_TYPES } from '../../pdf/types.js';
import { fieldRuleIssues, fieldRuleOutShape, fieldRuleShape } from './field-rules.schemas.js';

const pct = z.number().min(0).max(100);

/**
 * A field as callers send it: SPEC's names (positionXPercent…) or the Alt ones (positionX…), both
 * accepted. Which recipient it belongs to comes from recipientEmail, or from the recipient it is
 * nested in (Alt create payload).
 */
export const ZFieldInput = z
  .object({
    type: z.enum(FIELD_TYPES),
    recipientEmail: z.email().optional(),
    page: z.number().int().min(1).default(1),
    positionXPercent: pct.optional(),
    positionX: pct.optional(),
    positionYPercent: pct.optional(),
    positionY: pct.optional(),
    widthPercent: pct.optional(),
    width: pct.optional(),
    heightPercent: pct.optional(),
    height: pct.optional(),
    required: z.boolean().optional(),
    options: z.array(z.string().min(1).max(200)).min(1).max(50).optional(),
    ...fieldRuleShape,
  })
  .superRefine((f, ctx) => {
    fieldRuleIssues(f, ctx);
    for (const [a, b] of [
      ['positionXPercent', 'positionX'],
      ['positionYPercent', 'positionY'],
      ['widthPercent', 'width'],
      ['heightPercent', 'height'],
    ] as const) {
      if (f[a] === undefined && f[b] === undefined) ctx.addIssue({ code: 'custom', path: [a], message: `${a} (or ${b}) is required` });
    }
    const x = f.positionXPercent ?? f.positionX ?? 0;
    const y = f.positionYPercent ?? f.positionY ?? 0;
    const w = f.widthPercent ?? f.width ?? 0;
    const h = f.heightPercent ?? f.height ?? 0;
    if (x + w > 100) ctx.addIssue({ code: 'custom', path: ['widthPercent'], message: 'positionX + width must be within the page (<= 100)' });
    if (y + h > 100) ctx.addIssue({ code: 'custom', path: ['heightPercent'], message: 'positionY + height must be within the page (<= 100)' });
    if (w === 0 || h === 0) ctx.addIssue({ code: 'custom', path: ['widthPercent'], message: 'width and height must be above 0' });
    if ((f.type === 'RADIO' || f.type === 'DROPDOWN') && !f.options) ctx.addIssue({ code: 'custom', path: ['options'], message: `${f.type} needs options` });
  });
export type TFieldInput = z.infer<typeof ZFieldInput>;

/** A language a recipient is addressed in: the signing page, the emails to them, their certificate page. */
export const ZLocale = z
  .enum(LOCALES, { error: `must be one of the supported locales: ${LOCALES.join(', ')}` })
  .describe(`The language the recipient is addressed in (signing page, emails, certificate page): one of ${LOCALES.join(', ')}. Absent: the account's defaultLocale, else the browser's Accept-Language on the page, else en`);

export const ZRecipientInput = z.object({
  email: z.email().max(320),
  name: z.string().trim().min(1).max(200),
  role: z.enum(ROLES),
  signingOrder: z.number().int().min(1).max(1000).optional(),
  fields: z.array(ZFieldInput).max(200).optional(),
  /** SIGNER and APPROVER only: an emailed code must be confirmed before signing (USD 0.50 when sent). */
  verificationRequired: z.boolean().optional(),
  locale: ZLocale.optional(),
});

export const ZMeta = z.object({
  subject: z.string().max(300).optional(),
  message: z.string().max(5000).optional(),
  redirectUrl: z.url({ protocol: /^https?$/ }).optional(),
});

/** Bounds of automatic reminders (and of the account's defaults). */
export const REMINDER_LIMITS = { days: 60, max: 10, warningDays: 60 } as const;

export const ZReminders = z
  .strictObject({
    firstAfterDays: z.number().int().min(1).max(REMINDER_LIMITS.days).describe(`Days after the invitation (or a manual resend) before the first reminder, 1-${REMINDER_LIMITS.days}`),
    everyDays: z.number().int().min(1).max(REMINDER_LIMITS.days).describe(`Days between reminders after the first, 1-${REMINDER_LIMITS.days}`),
    max: z.number().int().min(0).max(REMINDER_LIMITS.max).describe(`Reminders per recipient at most, 0-${REMINDER_LIMITS.max} (0: none)`),
  })
  .describe('Automatic reminders by email to each recipient whose turn it is and who has not signed, approved or declined; none once the envelope ends, and none with delivery "embedded"')
  .meta({ id: 'Reminders' });

export const ZExpiryWarningDays = z
  .number()
  .int()
  .min(1)
  .max(REMINDER_LIMITS.warningDays)
  .describe(`One email this many days (1-${REMINDER_LIMITS.warningDays}) before expiresAt to each recipient whose turn it is and who has not acted yet`);

/** The JSON in the multipart `payload` part of POST /v1/envelopes (and /draft). */
export const ZCreatePayload = z.object({
  title: z.string().trim().min(1).max(500).optional(),
  recipients: z.array(ZRecipientInput).min(1).max(50),
  fields: z.array(ZFieldInput.refine((f) => f.recipientEmail !== undefined, { message: 'recipientEmail is required', path: ['recipientEmail'] })).max(500).optional(),
  storageExpiryDays: z.number().int().min(1).max(3650).optional(),
  expiresAt: z.iso.datetime({ offset: true }).optional(),
  meta: ZMeta.optional(),
  /** embedded: no invitation or reminder is emailed; the sender's app shows each recipient an embed link. */
  delivery: z
    .enum(['email', 'embedded'])
    .optional()
    .describe('email (default): recipients are invited by email. embedded: no invitation or reminder is emailed; your app frames each recipient\'s embed link (POST /v1/envelopes/{id}/recipients/{recipient}/embed-link)'),
  /** Create a DRAFT instead of sending (POST /v1/envelopes only; /draft always drafts). */
  draft: z.boolean().optional(),
  reminders: ZReminders.nullable().optional().describe("Automatic reminders (see Reminders); null: none; absent: the account's default (PATCH /v1/account). Not with the documenso engine (400 NOT_SUPPORTED_BY_ENGINE)"),
  expiryWarningDays: ZExpiryWarningDays.nullable().optional().describe("Days before expiresAt to warn whoever must still act, once; null: no warning; absent: the account's default. Not with the documenso engine (400 NOT_SUPPORTED_BY_ENGINE)"),
  allowDelegation: z
    .boolean()
    .optional()
    .describe('true: a SIGNER or APPROVER may hand the document to someone else from the signing page ("I am not the right person": name and email of the delegate); the delegate gets their own link and the old one stops working. Default false'),
});
export type TCreatePayload = z.infer<typeof ZCreatePayload>;

export const ZAddFields = z.object({
  fields: z.array(ZFieldInput.refine((f) => f.recipientEmail !== undefined, { message: 'recipientEmail is required', path: ['recipientEmail'] })).min(1).max(200),
});

/** PATCH a draft's field: any of page, position and size (SPEC's names or the Alt ones); the rest stays. */
export const ZFieldPatch = z
  .object({
    page: z.number().int().min(1).max(10000).optional(),
    positionXPercent: pct.optional(),
    positionX: pct.optional(),
    positionYPercent: pct.optional(),
    positionY: pct.optional(),
    widthPercent: pct.gt(0).optional(),
    width: pct.gt(0).optional(),
    heightPercent: pct.gt(0).optional(),
    height: pct.gt(0).optional(),
  })
  .strict()
  .refine((p) => Object.keys(p).length > 0, { message: 'give at least one of page, positionXPercent, positionYPercent, widthPercent, heightPercent' });
export type TFieldPatch = z.infer<typeof ZFieldPatch>;

export const ZSendBody = z.object({ meta: ZMeta.optional() }).nullish();

export const ZEnvelopeIdParam = z.object({ id: z.string() });
export const ZRecipientParam = z.object({
  id: z.string(),
  recipient: z
    .string()
    .regex(/^(\d{1,3}|[^\s@]+@[^\s@]+)$/, 'must be a position (1, 2, …) or an email address')
    .describe("The recipient's position in the envelope's recipients (1, 2, …: the order they were given in, as r1, r2 in markers) or their email address"),
});
export const ZFieldIdParam = z.object({ id: z.string(), fid: z.string() });

export const ZListQuery = z.object({ status: z.enum(ENVELOPE_STATUSES).optional(), wallet: z.string().optional() });
export const ZDownloadQuery = z.object({ version: z.enum(['signed', 'original']).default('signed') });

export const ZField = z
  .object({
    fieldId: z.number().int(),
    id: z.string(),
    type: z.enum(FIELD_TYPES),
    recipientEmail: z.string(),
    page: z.number().int(),
    positionX: z.number(),
    positionXPercent: z.number(),
    positionY: z.number(),
    positionYPercent: z.number(),
    width: z.number(),
    widthPercent: z.number(),
    height: z.number(),
    heightPercent: z.number(),
    ...fieldRuleOutShape,
  })
  .meta({ id: 'Field' });

export const ZRecipientStatus = z
  .object({
    email: z.string(),
    name: z.string(),
    role: z.enum(ROLES),
    signingOrder: z.number().int().nullable(),
    signingUrl: z.string(),
    signingStatus: z.string().describe('NOT_SIGNED | SIGNED | REJECTED'),
    readStatus: z.string().describe('NOT_OPENED | OPENED'),
    sendStatus: z.string().describe('NOT_SENT | SENT'),
    status: z.string().describe('Alt: PENDING | SIGNED | REJECTED'),
    signedAt: z.string().nullable(),
    viewedAt: z.string().nullable(),
    rejectedAt: z.string().nullable(),
    rejectionReason: z.string().nullable(),
    verificationRequired: z.boolean().describe('The recipient must confirm their email address with an emailed code before the document is shown to them'),
    verificationId: z
      .string()
      .nullable()
      .describe('The verification that gates this recipient (GET /v1/verifications/{id}); created, and charged, when the envelope is sent; null before the send and for recipients not gated'),
    locale: z.enum(LOCALES).nullable().describe("The recipient's own language as given at create; null: the account's defaultLocale, else the browser's"),
  })
  .meta({ id: 'RecipientStatus' });

export const ZHandoverDetails = z
  .object({
    from: z.object({ name: z.string(), email: z.string() }).describe('Who held the place before'),
    to: z.object({ name: z.string(), email: z.string() }).describe('Who holds it now'),
    by: z.enum(['sender', 'recipient']).describe('sender: reassigned through PATCH /v1/envelopes/{id}/recipients/{recipient}; recipient: delegated from the signing page'),
    reason: z.string().optional().describe("The delegator's reason, when they gave one"),
  })
  .meta({ id: 'HandoverDetails' });

export const ZEvent = z.object({
  eventType: z.string().describe('DOCUMENT_SENT, DOCUMENT_VIEWED, DOCUMENT_SIGNED, DOCUMENT_COMPLETED, DOCUMENT_REJECTED, DOCUMENT_EXPIRED, DOCUMENT_CANCELLED, RECIPIENT_CONSENTED (a recipient agreed to electronic records and signatures; listed here, not a webhook event), RECIPIENT_REMINDED and RECIPIENT_EXPIRY_WARNED (an automatic reminder or the expiry warning was emailed to recipientEmail), RECIPIENT_REASSIGNED (the sender replaced a recipient) and RECIPIENT_DELEGATED (a recipient handed the document to someone else)'),
  event: z.string().describe('The webhook event name, e.g. envelope.signed; recipient.consented for RECIPIENT_CONSENTED, which is not delivered to webhooks; envelope.reminder_sent for RECIPIENT_REMINDED and RECIPIENT_EXPIRY_WARNED and envelope.recipient_replaced for both hand-overs, each delivered only to webhooks that name it'),
  recipientEmail: z.string().nullable(),
  occurredAt: z.string(),
  details: ZHandoverDetails.optional().describe('RECIPIENT_REASSIGNED and RECIPIENT_DELEGATED only: who handed the place to whom, and who decided (their recipientEmail is the new person)'),
});

export const ZEnvelope = z
  .object({
    envelopeId: z.uuid(),
    engineEnvelopeId: z.string(),
    engineNumericId: z.string().nullable(),
    status: z.enum(ENVELOPE_STATUSES),
    title: z.string().nullable(),
    recipients: z.array(ZRecipientStatus),
    fields: z.array(ZField),
    detectedFromPlaceholders: z.boolean(),
    expiresAt: z.string(),
    storageExpiresAt: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    completedAt: z.string().nullable(),
    events: z.array(ZEvent).optional(),
  })
  .meta({ id: 'Envelope' });
export type TEnvelope = z.infer<typeof ZEnvelope>;

export const ZLiveStatus = z.object({
  envelopeId: z.uuid(),
  title: z.string().nullable(),
  status: z.enum(ENVELOPE_STATUSES),
  createdAt: z.string(),
  completedAt: z.string().nullable(),
  recipients: z.array(ZRecipientStatus),
});

export const ZDraftCreated = z.object({
  envelopeId: z.uuid(),
  status: z.literal('DRAFT'),
  title: z.string().nullable(),
  engineNumericId: z.string().nullable(),
  engineEnvelopeId: z.string(),
  recipients: z.array(ZRecipientStatus),
  fields: z.array(ZField),
  createdAt: z.string(),
});

export const ZSendResult = z.object({
  envelopeId: z.uuid(),
  status: z.enum(ENVELOPE_STATUSES),
  recipients: z.array(z.object({ name: z.string(), email: z.string(), signingUrl: z.string() })),
});

export const ZLinkReissued = z.object({
  envelopeId: z.uuid(),
  recipient: z.object({ name: z.string(), email: z.string(), role: z.enum(ROLES), signingUrl: z.string().describe('The new link; the old one no longer opens anything') }),
  invitationSent: z.boolean().describe('Whether the recipient is emailed an invitation with the new link: yes when they had been invited and have not acted yet; otherwise their turn\'s invitation will carry it'),
});

export const ZReassignBody = z
  .object({
    name: z.string().trim().min(1).max(200).optional(),
    email: z.email().max(320).optional(),
  })
  .strict()
  .refine((b) => b.name !== undefined || b.email !== undefined, { message: 'give name and/or email' });
export type TReassignBody = z.infer<typeof ZReassignBody>;

export const ZRecipientReplaced = z.object({
  envelopeId: z.uuid(),
  recipient: z.object({ name: z.string(), email: z.string(), role: z.enum(ROLES), signingUrl: z.string().describe("The new person's link; the old one no longer opens anything") }),
  previous: z.object({ name: z.string(), email: z.string() }).describe('Who held the place before'),
  invitationSent: z.boolean().describe('Whether the new person is emailed an invitation now: yes when it is their turn on a sent envelope (email delivery); otherwise their turn\'s invitation (or the draft\'s send) carries the link'),
  verificationId: z.string().nullable().describe('A verification-gated place: the new verification of the new address (charged like the first); null otherwise, and for a DRAFT (its send creates it)'),
});

export const ZResendResult = z.object({ success: z.literal(true), resentTo: z.array(z.object({ name: z.string(), email: z.string() })) });
export const ZSuccess = z.object({ success: z.literal(true) });
export const ZAddFieldsResult = z.object({ fields: z.array(ZField) });
