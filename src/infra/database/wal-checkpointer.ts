import { Injectable, Logger, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { DataSource } from 'typeorm';

/** How often the log is checkpointed; between two, the log grows by what the server wrote meanwhile. */
const CHECKPOINT_INTERVAL_MS = 1_000;
/** SQLite's default: a commit that leaves the log this many pages long checkpoints it itself. */
const DEFAULT_AUTOCHECKPOINT_PAGES = 1_000;

interface BetterSqliteHandle {
  pragma(sql: string): unknown;
  name: string;
  memory: boolean;
}

/**
 * On SQLite, the commit that takes the write-ahead log over 1,000 pages copies the log into the
 * database file itself, on the connection's thread, which is the server's event loop: during a
 * purge of 100,000 files that stalls every request for the checkpoint's duration, again and again.
 * The server turns that off and checkpoints from a worker thread with its own connection instead
 * (wal-checkpoint.worker.cjs). Should the worker fail, the connection checkpoints itself again.
 * PostgreSQL, in-memory databases and CLI processes (which do not serve requests) keep the default.
 */
@Injectable()
export class WalCheckpointer implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('WalCheckpointer');
  private worker: Worker | null = null;

  constructor(private readonly dataSource: DataSource) {}

  onModuleInit(): void {
    const connection = this.connection();
    if (!connection) return;
    const worker = new Worker(new URL('./wal-checkpoint.worker.cjs', import.meta.url), {
      workerData: { path: connection.name, intervalMs: CHECKPOINT_INTERVAL_MS },
      // A connection and a timer: a small heap keeps the thread's memory small.
      resourceLimits: { maxOldGenerationSizeMb: 16, maxYoungGenerationSizeMb: 1 },
    });
    worker.unref();
    const fallBack = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = null;
      this.logger.warn({ why }, 'WAL checkpoints are back on the server connection');
      if (this.dataSource.isInitialized) connection.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
    };
    worker.on('message', (message: { error?: string }) => message.error && this.logger.warn({ error: message.error }, 'WAL checkpoint failed'));
    worker.on('error', (error) => fallBack(String(error)));
    worker.on('exit', (code) => fallBack(`worker exited with code ${code}`));
    this.worker = worker;
    connection.pragma('wal_autocheckpoint = 0');
  }

  async onApplicationShutdown(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    this.worker = null;
    const exited = new Promise((resolve) => worker.once('exit', resolve));
    worker.postMessage('stop');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    await worker.terminate();
    const connection = this.connection();
    if (connection && this.dataSource.isInitialized) connection.pragma(`wal_autocheckpoint = ${DEFAULT_AUTOCHECKPOINT_PAGES}`);
  }

  /** The better-sqlite3 connection behind a file database, or null (PostgreSQL, in memory). */
  private connection(): BetterSqliteHandle | null {
    if (this.dataSource.options.type !== 'better-sqlite3') return null;
    const handle = (this.dataSource.driver as unknown as { databaseConnection?: BetterSqliteHandle }).databaseConnection;
    return handle && !handle.memory ? handle : null;
  }
}
