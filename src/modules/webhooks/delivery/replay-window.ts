import type { SqlDialect, SqlParameters } from '../../../infra/database/sql-dialect.js';
import type { WebhookEntity } from '../webhook.entity.js';

/**
 * The outbox events a replay of [since, until) to this webhook covers: the account's, of the subscribed
 * types, without a replay delivery to it still pending. One definition for the count the API answers
 * and the batches the job creates, so the two agree.
 */
export function replayWindowSql(dialect: SqlDialect, webhook: WebhookEntity, since: Date, until: Date, parameters?: SqlParameters): { where: string; parameters: SqlParameters } {
  const params = parameters ?? dialect.parameters();
  const where =
    `outbox_events.account_id = ${params.add(webhook.accountId)} AND outbox_events.occurred_at >= ${params.add(since.toISOString())} ` +
    `AND outbox_events.occurred_at < ${params.add(until.toISOString())} ` +
    `AND outbox_events.event IN (SELECT value FROM ${dialect.jsonValues(params.add(JSON.stringify(webhook.events)))}) ` +
    `AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_id = outbox_events.id AND d.webhook_id = ${params.add(webhook.id)} ` +
    `AND d.origin = 'replay' AND d.status = 'pending')`;
  return { where, parameters: params };
}
