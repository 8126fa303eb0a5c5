import { Injectable, Logger, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { SchedulerRegistry } from '@nestjs/schedule';
import { CronJob } from 'cron';
import { AppConfig } from '../../config/app-config.js';
import { PurgeTrashCommand } from './commands/purge-trash.command.js';

/**
 * Runs the trash purge on TRASH_PURGE_CRON in the server process. A run still going when the
 * next tick comes is not doubled; other processes may purge at the same time safely.
 */
@Injectable()
export class TrashPurgeScheduler implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('TrashPurgeScheduler');
  private running: Promise<unknown> | null = null;

  constructor(
    private readonly config: AppConfig,
    private readonly registry: SchedulerRegistry,
    private readonly commands: CommandBus,
  ) {}

  onApplicationBootstrap(): void {
    const job = CronJob.from({ cronTime: this.config.trashPurgeCron, onTick: () => this.tick(), start: true, waitForCompletion: true });
    this.registry.addCronJob('trash-purge', job as never);
  }

  async onApplicationShutdown(): Promise<void> {
    if (this.registry.doesExist('cron', 'trash-purge')) await this.registry.getCronJob('trash-purge').stop();
    await this.running;
  }

  private async tick(): Promise<void> {
    if (this.running) return;
    this.running = this.commands.execute(new PurgeTrashCommand()).catch((error: unknown) => this.logger.error({ err: error }, 'Trash purge failed'));
    await this.running;
    this.running = null;
  }
}
