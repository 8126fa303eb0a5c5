import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TIMESTAMP_COLUMN } from '../database/columns.js';

/** A running server process and the last time it proved it was alive. */
@Entity('server_instances')
export class ServerInstanceEntity {
  @PrimaryColumn({ type: 'varchar', length: 40 }) id: string;
  @Column({ ...TIMESTAMP_COLUMN, name: 'started_at' }) startedAt: Date;
  @Column({ ...TIMESTAMP_COLUMN, name: 'heartbeat_at' }) heartbeatAt: Date;
}
