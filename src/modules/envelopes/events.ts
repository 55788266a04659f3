/** Stored event types and the webhook event names they fan out as (SPEC.md Events). */
export const EVENT_NAMES = {
  DOCUMENT_SENT: 'envelope.sent',
  DOCUMENT_VIEWED: 'envelope.viewed',
  DOCUMENT_SIGNED: 'envelope.signed',
  DOCUMENT_COMPLETED: 'envelope.completed',
  DOCUMENT_REJECTED: 'envelope.rejected',
  DOCUMENT_EXPIRED: 'envelope.expired',
  DOCUMENT_CANCELLED: 'envelope.cancelled',
} as const;

export type EventType = keyof typeof EVENT_NAMES;

/**
 * Events the envelope's event list shows beyond the webhook set. SPEC.md fixes the seven webhook
 * events as V1's set, so these are listed on GET /v1/envelopes/{id} and never delivered.
 */
export const LISTED_ONLY_EVENT_NAMES = {
  /** The recipient agreed to use electronic records and signatures (before their first action). */
  RECIPIENT_CONSENTED: 'recipient.consented',
} as const;

/**
 * Webhook events beyond SPEC.md's seven: delivered only to registrations that name them (`"*"` keeps
 * meaning the seven, so existing receivers get nothing new), and listed on GET /v1/envelopes/{id}.
 * A recipient's place handed to another person, by the sender (reassignment) or by the recipient
 * (delegation), is one webhook event.
 */
export const OPT_IN_EVENT_NAMES = {
  /** An automatic reminder was emailed to a recipient who must still act (kind `reminder`). */
  RECIPIENT_REMINDED: 'envelope.reminder_sent',
  /** The one warning before expiresAt was emailed to a recipient who must still act (kind `expiry_warning`). */
  RECIPIENT_EXPIRY_WARNED: 'envelope.reminder_sent',
  RECIPIENT_REASSIGNED: 'envelope.recipient_replaced',
  RECIPIENT_DELEGATED: 'envelope.recipient_replaced',
} as const;

/** A bulk send ended (completed or cancelled): opt-in too; its body names the bulk send and its counts. */
export const BULK_SEND_COMPLETED = 'bulk_send.completed';

/** The opt-in webhook event names, each once. */
export const OPT_IN_EVENTS: string[] = [...new Set([...Object.values(OPT_IN_EVENT_NAMES), BULK_SEND_COMPLETED])];

export type ListedEventType = EventType | keyof typeof LISTED_ONLY_EVENT_NAMES | keyof typeof OPT_IN_EVENT_NAMES;

/** The name an event is listed under: its webhook name, or its own for a listed-only one. */
export const eventNameOf = (eventType: string): string =>
  EVENT_NAMES[eventType as EventType] ?? LISTED_ONLY_EVENT_NAMES[eventType as keyof typeof LISTED_ONLY_EVENT_NAMES] ?? OPT_IN_EVENT_NAMES[eventType as keyof typeof OPT_IN_EVENT_NAMES];

/** Whether an event is delivered to webhooks (SPEC.md's seven). */
export const isWebhookEvent = (eventType: string): eventType is EventType => Object.hasOwn(EVENT_NAMES, eventType);

/** The event a move into a status emits, when that move has one of its own. */
export const STATUS_EVENT: Partial<Record<string, EventType>> = {
  SENT: 'DOCUMENT_SENT',
  COMPLETED: 'DOCUMENT_COMPLETED',
  REJECTED: 'DOCUMENT_REJECTED',
  EXPIRED: 'DOCUMENT_EXPIRED',
  CANCELLED: 'DOCUMENT_CANCELLED',
};
