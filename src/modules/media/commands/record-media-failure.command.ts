import { Command, CommandHandler, ICommandHandler } from '@nestjs/cqrs';
import { Clock } from '../../../common/clock.js';
import { Transactions } from '../../../infra/database/transactions.js';
import { FileMediaEntity } from '../file-media.entity.js';
import type { MediaJobData } from '../media-jobs.js';

/**
 * A job gave up after its last retry (storage or clamd stayed unreachable). The thumbnail is marked
 * failed; a scan leaves scan_status pending (the file was never judged) and notes why.
 */
export class RecordMediaFailureCommand extends Command<void> {
  constructor(
    readonly kind: 'thumbnail' | 'scan',
    readonly job: MediaJobData,
    readonly message: string,
  ) {
    super();
  }
}

@CommandHandler(RecordMediaFailureCommand)
export class RecordMediaFailureHandler implements ICommandHandler<RecordMediaFailureCommand> {
  constructor(
    private readonly transactions: Transactions,
    private readonly clock: Clock,
  ) {}

  async execute({ kind, job, message }: RecordMediaFailureCommand): Promise<void> {
    const where = { fileId: job.fileId, blobKey: job.blobKey };
    const text = message.slice(0, 500);
    await this.transactions.run((tx) =>
      tx
        .getRepository(FileMediaEntity)
        .update(where, kind === 'thumbnail' ? { thumbnailStatus: 'failed', thumbnailError: text, updatedAt: this.clock.now() } : { scanNote: `scan gave up: ${text}`.slice(0, 500), updatedAt: this.clock.now() }),
    );
  }
}
