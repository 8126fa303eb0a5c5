import { getQueueToken } from '@nestjs/bullmq';
import { Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import { ModuleRef } from '@nestjs/core';
import type { Queue } from 'bullmq';
import { ALL_QUEUES } from '../queue/queue-names.js';

/**
 * Without a listener BullMQ prints every Redis connection error of a queue to stderr; while Redis is
 * away that is one stack trace per reconnect. This logs one warning per queue a minute instead.
 */
@Injectable()
export class QueueErrorLogger implements OnApplicationBootstrap {
  private readonly logger = new Logger('Queues');
  private readonly lastWarning = new Map<string, number>();

  constructor(private readonly moduleRef: ModuleRef) {}

  onApplicationBootstrap(): void {
    for (const name of ALL_QUEUES) {
      const queue = this.moduleRef.get<Queue>(getQueueToken(name), { strict: false });
      queue.on('error', (error: Error) => {
        if (Date.now() - (this.lastWarning.get(name) ?? 0) < 60_000) return;
        this.lastWarning.set(name, Date.now());
        this.logger.warn({ err: error, queue: name }, 'Queue cannot reach Redis; its jobs wait until it is back');
      });
    }
  }
}
