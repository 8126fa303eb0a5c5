import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { TrimEventsCommand } from './commands/trim-events.command.js';

/** Every ten minutes: retention is in days, so trimming more often buys nothing. */
const TRIM_CRON = '*/10 * * * *';

/** Runs the event trim in the server process; a run still going is not doubled, and processes trim safely side by side. */
@Injectable()
export class EventTrimScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('EventTrimScheduler');
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly registry: SchedulerRegistry,
    private readonly commands: CommandBus,
  ) {}

  onApplicationBootstrap(): void {
    const job = CronJob.from({ cronTime: TRIM_CRON, onTick: () => this.tick(), start: true, waitForCompletion: true });
    this.registry.addCronJob('event-trim', job as never);
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.registry.doesExist('cron', 'event-trim')) await this.registry.getCronJob('event-trim').stop();
    await this.running;
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = this.commands.execute(new TrimEventsCommand()).catch((error: unknown) => this.logger.error({ err: error }, 'Event trim failed'));
    await this.running;
    this.running = null;
  }
}
