import { Injectable, OnModuleInit } from '@nestjs/common';
import { DataSource, type EntitySubscriberInterface, type TransactionCommitEvent, type TransactionRollbackEvent } from 'typeorm';
import { takeOutboxRecorded } from '../../../infra/outbox/outbox.js';
import { DeliverySignal } from './delivery-signal.js';

/** Wakes the dispatcher right after a transaction that wrote outbox events commits. */
@Injectable()
export class OutboxCommitSubscriber implements EntitySubscriberInterface, OnModuleInit {
  constructor(
    private readonly dataSource: DataSource,
    private readonly signal: DeliverySignal,
  ) {}

  onModuleInit(): void {
    this.dataSource.subscribers.push(this);
  }

  afterTransactionCommit(event: TransactionCommitEvent): void {
    if (takeOutboxRecorded(event.queryRunner)) this.signal.nudge();
  }

  afterTransactionRollback(event: TransactionRollbackEvent): void {
    takeOutboxRecorded(event.queryRunner);
  }
}
