/** Every BullMQ queue of the service, in one place (the dashboard and metrics list them from here). */
export const QUEUES = {
  webhookDeliveries: 'webhook-deliveries',
  webhookReplays: 'webhook-replays',
  thumbnails: 'thumbnails',
  scans: 'scans',
} as const;

export type QueueName = (typeof QUEUES)[keyof typeof QUEUES];
export const ALL_QUEUES: QueueName[] = Object.values(QUEUES);
