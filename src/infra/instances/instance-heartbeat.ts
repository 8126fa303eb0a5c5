import { Injectable, Logger, OnApplicationBootstrap, OnApplicationShutdown } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { LessThan, Repository } from 'typeorm';
import { Clock } from '../../common/clock.js';
import { AppConfig } from '../../config/app-config.js';
import { ServerInstance } from './server-instance.js';
import { ServerInstanceEntity } from './server-instance.entity.js';

/** Beats a process may miss before it is taken for dead. */
export const MISSED_BEATS_BEFORE_DEAD = 3;

/**
 * Keeps this server process's row in server_instances fresh: written at start, touched every
 * INSTANCE_HEARTBEAT_MS, removed on a graceful shutdown. A process that stops beating (SIGKILL,
 * OOM, power loss) is dead to the others after 3 beats; rows of long-dead processes are pruned.
 */
@Injectable()
export class InstanceHeartbeat implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly logger = new Logger('InstanceHeartbeat');
  private timer: NodeJS.Timeout | null = null;

  constructor(
    @InjectRepository(ServerInstanceEntity) private readonly instances: Repository<ServerInstanceEntity>,
    private readonly instance: ServerInstance,
    private readonly config: AppConfig,
    private readonly clock: Clock,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    const now = this.clock.now();
    await this.instances.insert({ id: this.instance.id, startedAt: now, heartbeatAt: now });
    this.timer = setInterval(() => void this.beat(), this.config.instanceHeartbeatMs);
    this.timer.unref();
  }

  /**
   * After every module's beforeApplicationShutdown (Nest runs those for all modules first, root module first), so the
   * work this process still finishes there (first webhook attempts, see FirstAttempts) is never taken over meanwhile;
   * before the database closes (its module is global, so it shuts down last).
   */
  async onApplicationShutdown(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // A graceful stop has answered its requests already; its row going away tells the others at once.
    await this.instances.delete({ id: this.instance.id }).catch((error: unknown) => this.logger.warn({ err: error }, 'Could not remove this instance'));
  }

  private async beat(): Promise<void> {
    try {
      const now = this.clock.now();
      const touched = await this.instances.update({ id: this.instance.id }, { heartbeatAt: now });
      // Pruned while this process was stalled: it is alive after all.
      if (!touched.affected) await this.instances.insert({ id: this.instance.id, startedAt: now, heartbeatAt: now });
      await this.instances.delete({ heartbeatAt: LessThan(new Date(now.getTime() - 100 * this.config.instanceHeartbeatMs)) });
    } catch (error) {
      this.logger.warn({ err: error }, 'Heartbeat failed');
    }
  }

  /** The moment before which a heartbeat means its process is dead. */
  static deadBefore(now: Date, heartbeatMs: number): Date {
    return new Date(now.getTime() - MISSED_BEATS_BEFORE_DEAD * heartbeatMs);
  }
}
