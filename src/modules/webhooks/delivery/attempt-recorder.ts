import { Injectable } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import { Transactions } from '../../../infra/database/transactions.js';
import { type FinishedAttempt, type RecordedAttempt, RecordDeliveryAttemptsCommand } from './record-delivery-attempts.command.js';

/** Attempts written in one transaction at most. */
const MAX_BATCH = 500;

interface Waiting {
  attempt: FinishedAttempt;
  resolve: (recorded: RecordedAttempt) => void;
  reject: (error: unknown) => void;
}

/**
 * Group commit for attempt results: attempts that finish while a write is running are written together
 * in the next one, so a busy worker pays one transaction per batch instead of one per delivery. Each
 * caller gets its answer only once its attempt is committed, and the job stays active in BullMQ until
 * then: a crash before the commit leaves the job to be retried, never a delivery silently unrecorded.
 */
@Injectable()
export class AttemptRecorder {
  private waiting: Waiting[] = [];
  private writers = 0;
  private scheduled = false;
  /** SQLite runs one transaction at a time anyway; PostgreSQL overlaps a few, each on its own connection. */
  private readonly maxWriters: number;

  constructor(
    private readonly commands: CommandBus,
    transactions: Transactions,
  ) {
    this.maxWriters = transactions.dialect.concurrentTransactions ? 4 : 1;
  }

  record(attempt: FinishedAttempt): Promise<RecordedAttempt> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ attempt, resolve, reject });
      // The next turn of the event loop, so attempts finishing together share a write.
      if (!this.scheduled && this.writers < this.maxWriters) {
        this.scheduled = true;
        setImmediate(() => {
          this.scheduled = false;
          void this.write();
        });
      }
    });
  }

  private async write(): Promise<void> {
    if (this.writers >= this.maxWriters) return;
    this.writers++;
    try {
      while (this.waiting.length > 0) {
        const batch = this.takeBatch();
        try {
          const recorded = await this.commands.execute(new RecordDeliveryAttemptsCommand(batch.map((w) => w.attempt)));
          batch.forEach((w, i) => w.resolve(recorded[i]));
        } catch (error) {
          for (const w of batch) w.reject(error);
        }
      }
    } finally {
      this.writers--;
    }
  }

  /** Up to MAX_BATCH attempts, each delivery at most once (a second attempt on it waits for the next write). */
  private takeBatch(): Waiting[] {
    const batch: Waiting[] = [];
    const rest: Waiting[] = [];
    const deliveries = new Set<string>();
    for (const w of this.waiting) {
      if (batch.length < MAX_BATCH && !deliveries.has(w.attempt.delivery.id)) {
        deliveries.add(w.attempt.delivery.id);
        batch.push(w);
      } else {
        rest.push(w);
      }
    }
    this.waiting = rest;
    return batch;
  }
}
