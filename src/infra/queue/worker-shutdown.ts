import { WorkerHost } from '@nestjs/bullmq';
import { BeforeApplicationShutdown, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import type { Worker } from 'bullmq';

/** How long running jobs get to finish when the process stops. */
export const WORKER_CLOSE_GRACE_MS = 10_000;

/**
 * Closes every queue worker before the application shuts down: it waits (up to a deadline) for
 * the jobs a worker is running, then closes it without waiting on its blocking connection.
 * BullMQ's own graceful close waits for that connection, and after a Redis restart it can wait
 * forever, keeping a stopping process alive. A job cut off at the deadline is picked up again by
 * BullMQ's stalled-job check; every job here is idempotent.
 */
@Injectable()
export class WorkerShutdown implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly running = new Map<Worker, number>();

  constructor(private readonly discovery: DiscoveryService) {}

  onApplicationBootstrap(): void {
    for (const worker of this.workers()) {
      this.running.set(worker, 0);
      worker.on('active', () => this.running.set(worker, (this.running.get(worker) ?? 0) + 1));
      const settled = () => this.running.set(worker, Math.max(0, (this.running.get(worker) ?? 0) - 1));
      worker.on('completed', settled);
      worker.on('failed', settled);
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(
      [...this.running.keys()].map(async (worker) => {
        const deadline = Date.now() + WORKER_CLOSE_GRACE_MS;
        while ((this.running.get(worker) ?? 0) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
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
