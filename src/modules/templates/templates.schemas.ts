import { z } from 'zod';
import { ROLES } from '../../engine/engine.js';
import { FIELD_TYPES } from '../../pdf/types.js';
import { LOCALES } from '../../i18n/locales.js';
import { ZExpiryWarningDays, ZFieldInput, ZLocale, ZMeta, ZRecipientInput, ZReminders } from '../envelopes/envelopes.schemas.js';
import { fieldRuleOutShape } from '../envelopes/field-rules.schemas.js';

/**
 * A recipient slot as the create payload gives it (an envelope's recipient, nested Alt `fields`
 * included); its slot `id` is its 1-based position in the list.
 */
export const ZSlotInput = ZRecipientInput;

/** A field of a template names its slot by `recipientId` (the slot id) or by the slot's `recipientEmail`. */
export const ZTemplateFieldInput = ZFieldInput.safeExtend({
  recipientId: z.number().int().describe('The slot id (1-based position in recipients) this field belongs to').optional(),
}).refine((f) => f.recipientId !== undefined || f.recipientEmail !== undefined, { message: 'recipientId (a slot id) or recipientEmail is required', path: ['recipientId'] });
export type TTemplateFieldInput = z.infer<typeof ZTemplateFieldInput>;

/** The JSON in the multipart `payload` part of POST /v1/templates. */
export const ZTemplatePayload = z.object({
  title: z.string().trim().min(1).max(500),
  recipients: z.array(ZSlotInput).min(1).max(50),
  fields: z.array(ZTemplateFieldInput).max(500).optional(),
  meta: ZMeta.optional(),
});
export type TTemplatePayload = z.infer<typeof ZTemplatePayload>;

export const ZUpdateTemplate = z
  .object({
    title: z.string().trim().min(1).max(500).optional(),
    meta: ZMeta.describe('Replaces the stored meta as a whole').optional(),
  })
  .refine((b) => b.title !== undefined || b.meta !== undefined, { message: 'nothing to update: give title and/or meta', path: ['title'] });
export type TUpdateTemplate = z.infer<typeof ZUpdateTemplate>;

const ZMappedRecipient = z.object({
  id: z.number().int().describe('The template slot this person takes'),
  email: z.email().max(320),
  name: z.string().trim().min(1).max(200),
  locale: ZLocale.optional().describe("This person's language; absent: the slot's, else the account's defaultLocale"),
});

export const ZFromTemplate = z.object({
  title: z.string().trim().min(1).max(500).optional().describe("Default: the template's title"),
  sendImmediately: z.boolean().default(true).describe('false: a DRAFT, free until POST /v1/envelopes/{id}/send'),
  storageExpiryDays: z.number().int().min(1).max(3650).optional(),
  expiresAt: z.iso.datetime({ offset: true }).optional(),
  recipients: z.array(ZMappedRecipient).min(1).max(50).describe('Every slot of the template exactly once'),
  meta: ZMeta.optional().describe("Overrides the template's meta key by key"),
  reminders: ZReminders.nullable().optional().describe("Automatic reminders (see Reminders); null: none; absent: the account's default"),
  expiryWarningDays: ZExpiryWarningDays.nullable().optional().describe("Days before expiresAt to warn whoever must still act, once; null: none; absent: the account's default"),
  allowDelegation: z.boolean().optional().describe('true: recipients may hand the document to someone else from the signing page (see createEnvelope). Default false'),
  prefill: z
    .record(z.string().max(20), z.string().max(1000))
    .refine((p) => Object.keys(p).length <= 500, { message: 'at most 500 prefilled fields' })
    .optional()
    .describe("Values of the template's TEXT and NUMBER fields by template fieldId ({\"3\": \"ACME Ltd\"}), checked against each field's validation (FIELD_VALUE_INVALID); each becomes a read-only value the signer sees and cannot change, stamped as given"),
});
export type TFromTemplate = z.infer<typeof ZFromTemplate>;

export const ZFromTemplateAlt = ZFromTemplate.extend({ templateId: z.string().max(100) });

export const ZTemplateIdParam = z.object({ id: z.string() });
export const ZAltQuery = z.object({ alt: z.enum(['0', '1', 'true', 'false']).optional() });

const ZTemplateSlot = z
  .object({
    id: z.number().int().describe('Slot id: a from-template call maps a person to it'),
    email: z.string(),
    name: z.string(),
    role: z.enum(ROLES),
    signingOrder: z.number().int().nullable(),
    verificationRequired: z.boolean(),
    locale: z.enum(LOCALES).nullable().describe("The language of whoever fills the slot, unless the from-template call names one; null: the account's defaultLocale"),
  })
  .meta({ id: 'TemplateRecipient' });

/** POST /v1/templates/{id}/fields: fields added to a template, each naming its slot. */
export const ZAddTemplateFields = z.object({ fields: z.array(ZTemplateFieldInput).min(1).max(200) });
export const ZTemplateFieldParam = z.object({ id: z.string(), fid: z.string() });

export const ZTemplateField = z
  .object({
    fieldId: z.number().int(),
    id: z.string(),
    type: z.enum(FIELD_TYPES),
    recipientId: z.number().int().describe('The slot id'),
    recipientEmail: z.string().describe("The slot's email"),
    page: z.number().int(),
    positionX: z.number(),
    positionXPercent: z.number(),
    positionY: z.number(),
    positionYPercent: z.number(),
    width: z.number(),
    widthPercent: z.number(),
    height: z.number(),
    heightPercent: z.number(),
    required: z.boolean(),
    options: z.array(z.string()).nullable(),
    ...fieldRuleOutShape,
  })
  .meta({ id: 'TemplateField' });

const ZMetaOut = z.object({ subject: z.string().optional(), message: z.string().optional(), redirectUrl: z.string().optional() });

export const ZAddTemplateFieldsResult = z.object({ fields: z.array(ZTemplateField) });

export const ZTemplateSummary = z.object({
  templateId: z.uuid(),
  title: z.string(),
  type: z.literal('PRIVATE').describe('Templates are private to their owner (customer and mode)'),
  recipients: z.array(ZTemplateSlot),
  detectedFromPlaceholders: z.boolean(),
  meta: ZMetaOut,
  createdAt: z.string(),
  updatedAt: z.string(),
});

export const ZTemplate = ZTemplateSummary.extend({ fields: z.array(ZTemplateField) }).meta({ id: 'Template' });
export type TTemplate = z.infer<typeof ZTemplate>;

export const ZTemplateUpdated = z.object({ templateId: z.uuid(), title: z.string(), meta: ZMetaOut, updatedAt: z.string() });
