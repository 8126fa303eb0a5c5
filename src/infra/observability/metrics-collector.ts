import { getQueueToken } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Queue } from 'bullmq';
import { DataSource } from 'typeorm';
import { ALL_QUEUES } from '../queue/queue-names.js';
import { Metrics } from './metrics.js';

const STATES = ['waiting', 'active', 'delayed', 'prioritized', 'failed', 'completed'] as const;
const TIMEOUT_MS = 1_000;

/** Reads queue depths from Redis and the relay backlog from the database when Prometheus scrapes. */
@Injectable()
export class MetricsCollector {
  private readonly logger = new Logger('Metrics');

  constructor(
    private readonly metrics: Metrics,
    private readonly moduleRef: ModuleRef,
    private readonly dataSource: DataSource,
  ) {}

  async refresh(): Promise<void> {
    await Promise.all([this.refreshQueues(), this.refreshBacklog()]);
  }

  private async refreshQueues(): Promise<void> {
    await Promise.all(
      ALL_QUEUES.map(async (name) => {
        const queue = this.moduleRef.get<Queue>(getQueueToken(name), { strict: false });
        try {
          // A scrape must answer even while Redis is away; a missing series says "unknown" better than a stale number.
          const counts = await within(queue.getJobCounts(...STATES), TIMEOUT_MS);
          for (const state of STATES) this.metrics.queueJobs.set({ queue: name, state }, counts[state] ?? 0);
        } catch (error) {
          for (const state of STATES) this.metrics.queueJobs.remove({ queue: name, state });
          this.logger.debug({ err: error, queue: name }, 'Queue depth unavailable');
        }
      }),
    );
  }

  private async refreshBacklog(): Promise<void> {
    try {
      // Bounded like the queue depths: a database that hangs must not hang the scrape.
      const [[outbox], [unqueued]] = await within(
        Promise.all([
          this.dataSource.query(`SELECT COUNT(*) AS n FROM outbox_events WHERE relayed_at IS NULL`),
          this.dataSource.query(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE queued_at IS NULL AND status = 'pending'`),
        ]),
        TIMEOUT_MS,
      );
      this.metrics.outboxBacklog.set({ stage: 'outbox' }, Number(outbox.n));
      this.metrics.outboxBacklog.set({ stage: 'unqueued' }, Number(unqueued.n));
    } catch (error) {
      for (const stage of ['outbox', 'unqueued']) this.metrics.outboxBacklog.remove({ stage });
      this.logger.debug({ err: error }, 'Outbox backlog unavailable');
    }
  }
}

function within<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([promise, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error('timeout')), ms)))]).finally(() =>
    clearTimeout(timer),
  );
}
