import { boolean, index, jsonb, pgTable, text, timestamp, uuid } from 'drizzle-orm/pg-core';
import type { FieldRules } from '../../engine/field-rules.js';
import type { FieldType, PageBox, Placement } from '../../pdf/types.js';
import { customers } from './customers.js';

/** A recipient slot of a template: `id` is the integer a from-template call maps a person to. */
export type TemplateSlot = {
  id: number;
  email: string;
  name: string;
  role: string;
  signingOrder: number | null;
  verificationRequired: boolean;
  /** The language of whoever fills the slot, unless the from-template call names one. */
  locale?: string | null;
};

/** A field of a template, assigned to a slot; `hide` is the marker box covered when sealing. */
export type TemplateField = Placement & {
  fieldId: number;
  slot: number;
  type: FieldType;
  required: boolean;
  options: string[] | null;
  hide: Placement | null;
  /** Label, validation, the sender's value, the condition (on another field of the template, by its fieldId). */
  rules?: FieldRules | null;
};

/**
 * A saved envelope definition. Signet stores templates itself (they are not engine documents): the PDF
 * as a blob under `templates/<id>/`, the slots and fields as JSON on the row (both bounded by the
 * create schema and never changed after the create; only title and meta are updatable).
 */
export const templates = pgTable(
  'templates',
  {
    id: uuid('id').primaryKey().defaultRandom(),
    customerId: uuid('customer_id')
      .notNull()
      .references(() => customers.id),
    mode: text('mode', { enum: ['live', 'test'] }).notNull(),
    title: text('title').notNull(),
    meta: jsonb('meta').$type<{ subject?: string; message?: string; redirectUrl?: string }>().notNull().default({}),
    documentKey: text('document_key').notNull(),
    documentSha256: text('document_sha256').notNull(),
    pages: jsonb('pages').$type<PageBox[]>().notNull(),
    recipients: jsonb('recipients').$type<TemplateSlot[]>().notNull(),
    fields: jsonb('fields').$type<TemplateField[]>().notNull(),
    detectedFromPlaceholders: boolean('detected_from_placeholders').notNull().default(false),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('templates_customer_created_idx').on(t.customerId, t.mode, t.createdAt)],
);
