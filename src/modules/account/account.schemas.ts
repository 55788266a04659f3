import { z } from 'zod';
import { LOCALES } from '../../i18n/locales.js';
import { ZLocale } from '../envelopes/envelopes.schemas.js';
import { ALLOWED_ORIGINS_MAX, ZAllowedOrigins, ZBrandColor } from './brand.js';

/** The wallet-caller part of the account (SPEC leaves the names to us). */
export const ZAccountWalletFields = {
  walletAddress: z.string().nullable().describe('The wallet that signs in as this account (lower-case 0x address); null for an account made by the operator'),
  totalSpentCents: z.number().int().nullable().describe('Wallet callers: all-time spending in whole cents, charges minus refunds; null for API-key callers'),
  totalSpentFormatted: z.string().nullable().describe('totalSpentCents as text, e.g. "$0.30"; null for API-key callers'),
};

/** What the account holder sets (PATCH /v1/account; the dashboard's settings page). */
export const ZAccountSettingsFields = {
  displayName: z.string().describe('The name recipients see as the sender ("<displayName> asks you to sign"); the same value as `name`'),
  displayNameIsDefault: z
    .boolean()
    .describe('Whether displayName is still the one given at sign-up: the local part of the email address (or the wallet address), until the holder sets one'),
  notificationEmail: z.string().nullable().describe("Where the sender's notices go (an envelope completed, declined or expired); null: the account's email"),
  senderNotifications: z.boolean().describe('Whether those notices are sent at all'),
  consentText: z.string().nullable().describe('What recipients agree to before acting (electronic records and signatures); null: the built-in text'),
  allowedOrigins: z.array(z.string()).describe("Origins whose pages may frame this account's embed links (the embed page's frame-ancestors, and where its events are posted); empty: none"),
  logoUrl: z.string().nullable().describe('The logo at the top of the signing page and in invitations, at its public, immutable address (set with PUT /v1/account/logo); null: none'),
  brandColor: z.string().nullable().describe("Accent (#rrggbb) of the signing page's primary buttons and the invitation's button; null: Signet's own"),
  defaultLocale: z.enum(LOCALES).nullable().describe("The language of recipients who have no locale of their own (signing page, emails, certificate page); null: the recipient's browser's, else en"),
};

export const DISPLAY_NAME_MAX = 100;
export const CONSENT_TEXT_MAX = 5000;

// Bidirectional overrides and isolates (U+202A-U+202E, U+2066-U+2069) can make a name read as
// something else in an inbox; control characters have no place in one-line text at all.
const UNSAFE_IN_LINE = /[\p{Cc}\u202a-\u202e\u2066-\u2069]/u;
// A multi-line text keeps its line breaks and tabs, nothing else of the kind.
const UNSAFE_IN_TEXT = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/u;

export const ZAccountSettingsPatch = z
  .strictObject({
    displayName: z
      .string()
      .trim()
      .min(1)
      .max(DISPLAY_NAME_MAX)
      .refine((s) => !UNSAFE_IN_LINE.test(s), 'must not contain control or bidirectional-override characters')
      .optional()
      .describe(`The name recipients see as the sender, 1-${DISPLAY_NAME_MAX} characters after trimming`),
    notificationEmail: z
      .union([z.email().max(320), z.null()])
      .optional()
      .describe("Where the sender's notices go; null: back to the account's email"),
    senderNotifications: z.boolean().optional().describe('false: no email when an envelope completes, is declined or expires'),
    consentText: z
      .union([
        z
          .string()
          .trim()
          .min(1)
          .max(CONSENT_TEXT_MAX)
          .refine((s) => !UNSAFE_IN_TEXT.test(s), 'must not contain control characters other than line breaks and tabs'),
        z.null(),
      ])
      .optional()
      .describe(`What recipients agree to before acting, plain text up to ${CONSENT_TEXT_MAX} characters (blank lines separate paragraphs); null: the built-in text`),
    allowedOrigins: ZAllowedOrigins.optional().describe(
      `Up to ${ALLOWED_ORIGINS_MAX} origins (https, or http for localhost) whose pages may frame embed links, e.g. ["https://app.example.com"]; [] for none`,
    ),
    brandColor: z
      .union([ZBrandColor, z.null()])
      .optional()
      .describe('#rrggbb with a contrast of at least 4.5:1 against white text (WCAG AA); null: back to Signet\'s own'),
    defaultLocale: ZLocale.nullable()
      .optional()
      .describe(`The language of recipients who have no locale of their own: one of ${LOCALES.join(', ')}; null: the recipient's browser's, else en`),
  })
  .refine((b) => Object.keys(b).length > 0, 'give at least one of displayName, notificationEmail, senderNotifications, consentText, allowedOrigins, brandColor, defaultLocale')
  .meta({ id: 'AccountSettingsPatch' });
export type TAccountSettingsPatch = z.infer<typeof ZAccountSettingsPatch>;

export const ZAccount = z
  .object({
    accountId: z.uuid(),
    email: z.string(),
    name: z.string(),
    apiKeyPrefix: z.string().nullable().describe('Display prefix of the key used for this call'),
    mode: z.enum(['live', 'test']).describe('Mode of the credential used for this call'),
    creditsCents: z.number().int().describe('Prepaid balance in whole cents'),
    creditsFormatted: z.string().describe('Balance as text, e.g. "$5.00"'),
    balanceMicros: z.number().int().describe('Exact balance in micros (USD 1 = 1,000,000)'),
    sandboxUsed: z.number().int(),
    sandboxLimit: z.number().int(),
    createdAt: z.iso.datetime(),
    ...ZAccountWalletFields,
    ...ZAccountSettingsFields,
  })
  .meta({ id: 'Account' });
export type TAccount = z.infer<typeof ZAccount>;

export const ZUsageEntry = z
  .object({
    id: z.uuid(),
    direction: z.enum(['debit', 'credit', 'refund', 'reversal']).describe('reversal: a card top-up taken back after the card payment was refunded or disputed'),
    amountCents: z.number().int(),
    amountFormatted: z.string(),
    amountMicros: z.number().int(),
    description: z.string(),
    envelopeId: z.uuid().nullable(),
    envelopeTitle: z.string().nullable(),
    txHash: z.string().nullable(),
    createdAt: z.iso.datetime(),
  })
  .meta({ id: 'UsageEntry' });
export type TUsageEntry = z.infer<typeof ZUsageEntry>;

const ZCents = z.number().int().describe('Net spending in whole cents (charges minus refunds booked in the period)');

export const ZAccountSummary = z
  .object({
    walletAddress: z.string().describe('The signed-in wallet, lower case'),
    summary: z.object({
      totalEnvelopes: z.number().int().describe('Envelopes of the account, every status'),
      totalSpentCents: z.number().int().describe('All-time spending in whole cents, charges minus refunds'),
      totalSpentFormatted: z.string().describe('totalSpentCents as text, e.g. "$0.30"'),
      byStatus: z.record(z.string(), z.number().int()).describe('Envelope count per status; statuses with none are absent'),
    }),
    spending: z.object({
      byDay: z.array(z.object({ date: z.string().describe('YYYY-MM-DD (UTC)'), cents: ZCents })).describe('The last 30 days (UTC) with spending, oldest first; days without any are absent'),
      byMonth: z.array(z.object({ month: z.string().describe('YYYY-MM (UTC)'), cents: ZCents })).describe('The last 12 months (UTC) with spending, oldest first; months without any are absent'),
    }),
    pendingEnvelopes: z
      .array(
        z.object({
          envelopeId: z.uuid(),
          title: z.string().nullable(),
          status: z.string(),
          createdAt: z.iso.datetime(),
          updatedAt: z.iso.datetime().describe('Last activity'),
        }),
      )
      .describe('The 10 most recently active envelopes not in a terminal state (DRAFT, PENDING, SENT, PARTIALLY_SIGNED), most recent first'),
  })
  .meta({ id: 'AccountSummary' });
export type TAccountSummary = z.infer<typeof ZAccountSummary>;

export const ZProductParam = z.object({ product: z.string().describe('The product id; the one this server offers is PRODUCT_ID (default service_id)') });

export const ZProductEnrollment = z
  .object({
    product: z.string(),
    enabled: z.literal(true),
    enabledAt: z.iso.datetime().describe('When the account first enabled it; unchanged by repeated calls'),
  })
  .meta({ id: 'ProductEnrollment' });
export type TProductEnrollment = z.infer<typeof ZProductEnrollment>;

export const ZProductList = z.object({ data: z.array(ZProductEnrollment).describe('Enabled products; empty when none') }).meta({ id: 'ProductEnrollmentList' });
