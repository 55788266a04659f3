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

/** The event a move into a status emits, when that move has one of its own. */
export const STATUS_EVENT: Partial<Record<string, EventType>> = {
  SENT: 'DOCUMENT_SENT',
  COMPLETED: 'DOCUMENT_COMPLETED',
  REJECTED: 'DOCUMENT_REJECTED',
  EXPIRED: 'DOCUMENT_EXPIRED',
  CANCELLED: 'DOCUMENT_CANCELLED',
};
