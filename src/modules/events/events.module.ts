import { Module } from '@nestjs/common';
import { AccountsModule } from '../accounts/accounts.module.js';
import { TrimEventsHandler } from './commands/trim-events.command.js';
import { EventFeedCursor } from './event-feed-cursor.js';
import { EventSequencer } from './event-sequencer.js';
import { EventTrimScheduler } from './event-trim.scheduler.js';
import { EventsController } from './events.controller.js';
import { FeedWakeups } from './feed-wakeups.js';
import { ListEventsHandler } from './queries/list-events.query.js';

/**
 * The event feed (GET /v1/events) over the outbox: positions stamped after commit, long polls woken
 * through Redis, and retention. Server only: its sequencer, wake-ups and trim schedule are background work.
 */
@Module({
  // The key cache tells a long poll whether a key was revoked while it waited.
  imports: [AccountsModule],
  controllers: [EventsController],
  providers: [EventFeedCursor, FeedWakeups, EventSequencer, ListEventsHandler, TrimEventsHandler, EventTrimScheduler],
})
export class EventsModule {}
