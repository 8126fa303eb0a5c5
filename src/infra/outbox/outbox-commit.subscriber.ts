import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource, type EntitySubscriberInterface, type TransactionCommitEvent, type TransactionRollbackEvent } from 'typeorm';
import { takeOutboxRecorded } from './outbox.js';
import { OutboxSignal } from './outbox-signal.js';

/** Signals right after a transaction that wrote outbox events commits (in every process: server and CLI). */
@Injectable()
export class OutboxCommitSubscriber implements EntitySubscriberInterface, OnModuleInit {
  constructor(
    private readonly dataSource: DataSource,
    private readonly signal: OutboxSignal,
  ) {}

  onModuleInit(): void {
    this.dataSource.subscribers.push(this);
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    if (takeOutboxRecorded(event.queryRunner)) this.signal.committed();
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    takeOutboxRecorded(event.queryRunner);
  }
}
