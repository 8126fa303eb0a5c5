import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { Clock } from '../../../common/clock.js';
import { AppConfig } from '../../../config/app-config.js';
import { Transactions } from '../../../infra/database/transactions.js';

export interface TrimResult {
  trimmed: number;
  trimmed_through: number;
}

export class TrimEventsCommand extends Command<TrimResult> {
  /** `now` defaults to the clock; tests pass a later time to age events without waiting. */
  constructor(readonly now?: Date) {
    super();
  }
}

/** Feed positions removed per transaction, so requests keep flowing while a large backlog is trimmed. */
const POSITIONS_PER_BATCH = 5000;

/**
 * Deletes events older than EVENT_RETENTION_DAYS from the outbox, always a prefix of the feed: it removes
 * every position up to the first event that must stay (one still too young, or not yet relayed to webhooks,
 * which is never trimmed), and records that position as `trimmed_through`. Positions after it are all
 * retained, so a cursor at or after it has lost nothing, and one before it answers 410 cursor_expired.
 */
@CommandHandler(TrimEventsCommand)
export class TrimEventsHandler implements ICommandHandler<TrimEventsCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly config: AppConfig,
  ) {}

  async execute(command: TrimEventsCommand): Promise<TrimResult> {
    const now = command.now ?? this.clock.now();
    const cutoff = new Date(now.getTime() - this.config.eventRetentionDays * 86_400_000).toISOString();
    let trimmed = 0;
    // Found once, in the first batch: an event at or below it cannot become one that must stay (relayed_at is
    // only ever set, occurred_at never changes), and later stamps are all above it.
    let horizon: number | null = null;
    for (;;) {
      const batch = await this.transactions.run(async (tx) => {
        const dialect = this.transactions.dialect;
        // The sequence row lock orders this trim with stamping and other trims.
        await tx.query('UPDATE event_feed_sequence SET trimmed_through = trimmed_through WHERE id = 1');
        const [sequence]: Array<{ last_position: string | number; trimmed_through: string | number }> = await tx.query(
          'SELECT last_position, trimmed_through FROM event_feed_sequence WHERE id = 1',
        );
        const from = Number(sequence.trimmed_through);
        if (horizon === null) {
          const params = dialect.parameters();
          const [keep]: Array<{ feed_position: string | number }> = await tx.query(
            `SELECT feed_position FROM outbox_events WHERE feed_position > ${params.add(from)} AND (occurred_at >= ${params.add(cutoff)} OR relayed_at IS NULL)
             ORDER BY feed_position LIMIT 1`,
            params.values,
          );
          horizon = keep ? Number(keep.feed_position) - 1 : Number(sequence.last_position);
        }
        const through = Math.min(horizon, from + POSITIONS_PER_BATCH);
        if (through <= from) return { deleted: 0, through: from, done: true };
        const range = dialect.parameters();
        const inRange = `feed_position > ${range.add(from)} AND feed_position <= ${range.add(through)}`;
        const [{ count }]: Array<{ count: string | number }> = await tx.query(`SELECT COUNT(*) AS count FROM outbox_events WHERE ${inRange}`, range.values);
        await tx.query(`DELETE FROM outbox_events WHERE ${inRange}`, range.values);
        const set = dialect.parameters();
        await tx.query(`UPDATE event_feed_sequence SET trimmed_through = ${set.add(through)} WHERE id = 1`, set.values);
        return { deleted: Number(count), through, done: through >= horizon };
      });
      trimmed += batch.deleted;
      if (batch.done) return { trimmed, trimmed_through: batch.through };
      await yieldToEventLoop();
    }
  }
}
