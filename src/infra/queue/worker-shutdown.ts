import { WorkerHost } from '@nestjs/bullmq';
import { BeforeApplicationShutdown, Injectable } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { Worker } from 'bullmq';

/** How long running jobs get to finish when the process stops. */
export const WORKER_CLOSE_GRACE_MS = 10_000;

/**
 * Closes every queue worker before the application shuts down: it stops fetching jobs at once (so a stopping
 * process leaves a backlog, and jobs handed over while it stops, to the other processes), waits up to a deadline
 * for the jobs it runs (BullMQ counts each, a job put back with DelayedError included), then closes it without
 * waiting on its blocking connection. BullMQ's own graceful close waits for that connection, and after a Redis
 * restart it can wait forever, keeping a stopping process alive. A job cut off at the deadline is picked up again
 * by BullMQ's stalled-job check; every job here is idempotent.
 */
@Injectable()
export class WorkerShutdown implements BeforeApplicationShutdown {
  constructor(private readonly discovery: DiscoveryService) {}

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(
      this.workers().map(async (worker) => {
        let timer: NodeJS.Timeout | undefined;
        const deadline = new Promise<void>((resolve) => (timer = setTimeout(resolve, WORKER_CLOSE_GRACE_MS)));
        await Promise.race([worker.pause().catch(() => undefined), deadline]);
        clearTimeout(timer);
        await worker.close(true).catch(() => undefined);
      }),
    );
  }

  private workers(): Worker[] {
    return this.discovery
      .getProviders()
      .map((wrapper) => wrapper.instance as unknown)
      .filter((instance): instance is WorkerHost => instance instanceof WorkerHost)
      .flatMap((host) => {
        try {
          return [host.worker];
        } catch {
          return []; // a host whose worker was never created (e.g. workers disabled)
        }
      });
  }
}
