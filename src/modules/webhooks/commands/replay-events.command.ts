import { randomUUID } from 'node:crypto';
import { InjectQueue } from '@nestjs/bullmq';
import { Command, CommandHandler, type ICommandHandler } from '@nestjs/cqrs';
import type { Queue } from 'bullmq';
import type { Actor } from '../../../common/auth/actor.js';
import { Clock } from '../../../common/clock.js';
import { InvalidRequest, NotFound, ServiceUnavailable } from '../../../common/errors/api-error.js';
import { parseTimestamp } from '../../../common/http/timestamp.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { QUEUES } from '../../../infra/queue/queue-names.js';
import { DeliveryQueuer, withTimeout } from '../delivery/delivery-queuer.js';
import type { ReplayJob } from '../delivery/replay-events.processor.js';
import { replayWindowSql } from '../delivery/replay-window.js';
import type { ReplayQueuedResponse, ReplayWebhookRequest } from '../dto/replay-webhook.request.js';
import { WebhookSecretBox } from '../webhook-secret-box.js';
import { WebhookEntity } from '../webhook.entity.js';

/** How long the request waits for Redis to take or find the replay's job. */
const REDIS_TIMEOUT_MS = 5_000;

/** Runs of a replay job at most: the 1 s exponential backoff between them adds up to about 8.5 minutes. */
const REPLAY_JOB_ATTEMPTS = 10;

/**
 * Replays a window of retained events to a webhook: a new delivery (new delivery id, same event id, the
 * usual schedule and attempt log) of every event in [since, until) that the webhook subscribes to. The
 * answer counts them with one query; the deliveries are made in batches by a background job
 * (ReplayEventsProcessor), so a window of 100,000 events does not hold the request. An event that already
 * has a pending replay delivery to this webhook is neither counted nor queued again.
 */
export class ReplayEventsCommand extends Command<ReplayQueuedResponse> {
  constructor(
    readonly actor: Actor,
    readonly webhookId: string,
    readonly request: ReplayWebhookRequest,
  ) {
    super();
  }
}

@CommandHandler(ReplayEventsCommand)
export class ReplayEventsHandler implements ICommandHandler<ReplayEventsCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
    private readonly secrets: WebhookSecretBox,
    private readonly queuer: DeliveryQueuer,
    @InjectQueue(QUEUES.webhookReplays) private readonly queue: Queue<ReplayJob>,
  ) {}

  async execute({ actor, webhookId, request }: ReplayEventsCommand): Promise<ReplayQueuedResponse> {
    const webhook = await this.transactions.dataSource.getRepository(WebhookEntity).findOneBy({ id: webhookId, accountId: actor.accountId });
    if (!webhook) throw new NotFound('webhook', webhookId);
    webhook.refuseUnlessActive('replay');
    // The job signs every replayed event with it: refused now rather than answering a count and sending nothing.
    this.secrets.signingSecretOf(webhook);
    // Both validated by @IsTimestamp, so neither parses to null here.
    const since = parseTimestamp(request.since)!;
    const now = this.clock.now();
    const requestedUntil = request.until === undefined ? null : parseTimestamp(request.until)!;
    // A replay sends what has happened: a later until is now, or the job (which may run long after this answer) would
    // replay events that happen meanwhile, which their own deliveries send anyway, beyond the count answered here.
    const open = requestedUntil === null || requestedUntil.getTime() > now.getTime();
    const until = open ? now : requestedUntil;
    if (!(since.getTime() < until.getTime())) throw InvalidRequest.fields([{ field: 'since', message: 'must be before until (or before now)' }]);

    // The job lives in Redis: while it is away the request is refused at once rather than held until it is back.
    if (!(await this.queuer.redisReady())) throw replayUnavailable();
    // The same window while its job has not finished: that job queues these events; nothing new here. An open window (no
    // until, or a later one) is keyed as open, not by this request's now, so a retry finds its job; that job ends where its
    // request was made, so this one goes on from there (through the jobs of earlier such requests still pending): the
    // events that occurred since are queued too, once, by a job keyed as the open window from that point.
    let from = since;
    let jobId = replayJobId(webhook.id, from, open ? null : until);
    for (;;) {
      const running = await withTimeout(this.queue.getJob(jobId), REDIS_TIMEOUT_MS, 'looking up the replay job').catch(() => {
        throw replayUnavailable();
      });
      if (!running || (await running.isCompleted()) || (await running.isFailed())) break;
      const coveredUntil = new Date(running.data.until);
      if (!open || !(coveredUntil.getTime() < until.getTime())) return { queued: 0 };
      from = coveredUntil;
      jobId = replayJobId(webhook.id, from, null);
    }

    const window = replayWindowSql(this.transactions.dialect, webhook, from, until);
    const [{ count }]: Array<{ count: string | number }> = await this.transactions.dataSource.query(
      `SELECT COUNT(*) AS count FROM outbox_events WHERE ${window.where}`,
      window.parameters.values,
    );
    const queued = Number(count);
    if (queued === 0) return { queued };
    // A failed run (the database away for a moment) is tried again from the last batch it saved, for about 8 minutes.
    const requestToken = randomUUID();
    const job = this.queue.add(
      'replay',
      { webhookId: webhook.id, since: from.toISOString(), until: until.toISOString(), request: requestToken },
      { jobId, removeOnComplete: true, removeOnFail: true, attempts: REPLAY_JOB_ATTEMPTS, backoff: { type: 'exponential', delay: 1_000 } },
    );
    const queuedJob = await withTimeout(
      job.then(() => this.queue.getJob(jobId)),
      REDIS_TIMEOUT_MS,
      'queueing the replay job',
    ).catch(() => {
      throw replayUnavailable();
    });
    // A request of the same window added its job between our look-up and our add (the add was then a no-op): that job
    // queues these events, and its request counted them. (A job already finished and gone cannot tell; counted.)
    if (queuedJob && queuedJob.data.request !== requestToken) return { queued: 0 };
    return { queued };
  }
}

/** One job per webhook and window while it runs; `until` null for an open window (no until, or one later than now). */
function replayJobId(webhookId: string, since: Date, until: Date | null): string {
  return `replay-${webhookId}-${since.getTime()}-${until === null ? 'open' : until.getTime()}`;
}

function replayUnavailable(): ServiceUnavailable {
  return new ServiceUnavailable('Replays are queued in Redis, which cannot be reached right now; try again shortly.');
}
