import { Injectable } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { databaseCounts } from '../database/statement-counter.js';

/**
 * The Prometheus metrics of one server process, in its own registry (so several applications in one
 * process, as in tests, do not collide). Gauges that need I/O are filled in at scrape time by MetricsCollector.
 */
@Injectable()
export class Metrics {
  readonly registry = new Registry();

  readonly httpRequestSeconds = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request durations by method, route pattern and status code.',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly deliveries = new Counter({
    name: 'webhook_deliveries_total',
    help: 'Webhook delivery attempts by outcome: succeeded, retrying (failed, another attempt follows) or failed (no attempt left).',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  readonly deliveryAttemptSeconds = new Histogram({
    name: 'webhook_delivery_attempt_duration_seconds',
    help: 'Duration of webhook delivery attempts (until the receiver answered, failed or timed out).',
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
    registers: [this.registry],
  });

  readonly queueJobs = new Gauge({
    name: 'queue_jobs',
    help: 'Jobs per BullMQ queue and state (waiting, active, delayed, prioritized, failed, completed).',
    labelNames: ['queue', 'state'] as const,
    registers: [this.registry],
  });

  readonly outboxBacklog = new Gauge({
    name: 'webhook_outbox_backlog',
    help: 'Events waiting for the webhook relay: outbox rows not yet relayed (stage=outbox) and deliveries not yet queued (stage=unqueued).',
    labelNames: ['stage'] as const,
    registers: [this.registry],
  });

  readonly databaseStatements = new Counter({
    name: 'db_statements_total',
    help: 'SQL statements sent to the database by this process (BEGIN and COMMIT included).',
    registers: [this.registry],
    collect() {
      this.reset();
      this.inc(databaseCounts.statements);
    },
  });

  readonly databaseTransactions = new Counter({
    name: 'db_transactions_total',
    help: 'Database transactions started by this process.',
    registers: [this.registry],
    collect() {
      this.reset();
      this.inc(databaseCounts.transactions);
    },
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}
