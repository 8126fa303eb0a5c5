/** The event names of the specification, plus the test event a webhook owner can send. */
export const EVENT_NAMES = [
  'file.uploaded',
  'file.deleted',
  'file.shared',
  'share.accessed',
  'folder.created',
  'storage.warning',
  'user.quota_exceeded',
] as const;
export type EventName = (typeof EVENT_NAMES)[number];

/** A state change worth telling webhooks about, as recorded in the outbox. `data` is the event's payload. */
export interface DomainEvent {
  id: string;
  name: EventName | 'webhook.test';
  accountId: string;
  occurredAt: Date;
  data: Record<string, unknown>;
}
