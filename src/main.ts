import 'reflect-metadata';
import { type AddressInfo, createServer } from 'node:net';
import { ConfigurationError, loadConfig, onChosenPort, withoutPassword } from './config/app-config.js';
import { createApp } from './app.factory.js';
import { probeRedis } from './infra/redis/redis.module.js';
import { MigrationError } from './infra/database/apply-migrations.js';
import { cannotMigrateDatabase, cannotOpenDatabase, probeDatabase } from './infra/database/probe-database.js';
import { Draining } from './infra/shutdown/draining.js';
import { LocalBlobStorage } from './infra/storage/local-blob-storage.js';
import { collectGarbage } from './garbage-collection.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const redisProblem = await probeRedis(config.redisUrl);
  if (redisProblem) {
    process.stderr.write(
      `Cannot reach Redis at REDIS_URL=${withoutPassword(config.redisUrl)} (${redisProblem}).\n` +
        'Start Redis (for example: redis-server --daemonize yes) or point REDIS_URL at a running one.\n',
    );
    process.exit(1);
  }
  const databaseProblem = await probeDatabase(config.database);
  if (databaseProblem) {
    process.stderr.write(`${cannotOpenDatabase(config.database, databaseProblem)}.\n`);
    process.exit(1);
  }
  // The resumable-upload store makes its directory while the application is built, and would crash on one it cannot
  // use (a file, no permission) with an uncaught error; said here instead, like the database.
  if (config.storage.driver === 'local') {
    const storageProblem = await new LocalBlobStorage(config.storage.dir).check().then(
      () => null,
      (error: unknown) => (error instanceof Error ? error.message : String(error)),
    );
    if (storageProblem) {
      process.stderr.write(`Cannot use the blob directory at STORAGE_DIR=${config.storage.dir} (${storageProblem}).\n`);
      process.exit(1);
    }
  }
  // Said before listening, so that whoever sees the service up has seen where its secrets come from.
  if (config.developmentSecrets) {
    const { names, file, created } = config.developmentSecrets;
    process.stdout.write(
      `Development: ${names.join(' and ')} ${created ? 'generated and kept in' : 'read from'} ${file}, so signed links survive restarts (set them in the environment for production)\n`,
    );
  }
  // Taken before anything starts, and held while the application is built: a second server on a taken port would
  // otherwise run migrations and take queue jobs before failing to listen. For PORT=0 the system chooses the port
  // here, so that the links the service hands out can name it.
  const reserved = await reservePort(config.port).catch((error: unknown) => failToListen(config.port, error));
  const listening = config.port === 0 ? onChosenPort(config, reserved.port) : config;
  const app = await createApp(listening).catch((error: unknown) => {
    if (!(error instanceof MigrationError)) throw error;
    process.stderr.write(`${cannotMigrateDatabase(config.database, error.reason)}.\n`);
    process.exit(1);
  });
  try {
    await reserved.release();
    await app.listen(listening.port);
  } catch (error) {
    // Taken meanwhile: the jobs this process took are handed back before it exits.
    await Promise.race([app.close(), new Promise((resolve) => setTimeout(resolve, SHUTDOWN_GRACE_MS).unref())]);
    failToListen(listening.port, error);
  }
  // Start-up (module loading, metadata, migrations, the OpenAPI document) leaves garbage that V8
  // keeps until the heap grows; collected and compacted now, the process idles about 18 MiB smaller.
  collectGarbage();
  process.stdout.write(`File storage service listening on ${listening.publicBaseUrl} (port ${listening.port}); API docs at ${listening.publicBaseUrl}/docs\n`);

  // Graceful shutdown: stop accepting connections and let requests in flight finish while the
  // database, Redis and queues are still open; only then close the application.
  let stopping = false;
  const shutdown = async (signal: NodeJS.Signals) => {
    // A second signal (npm forwards Ctrl-C to a process that got it from the terminal too; orchestrators resend)
    // must not kill the requests being finished: the grace period below bounds the wait anyway.
    if (stopping) {
      process.stdout.write(`${signal} received again: already stopping (at most ${SHUTDOWN_GRACE_MS / 1000} s)\n`);
      return;
    }
    stopping = true;
    process.stdout.write(`${signal} received: finishing requests in flight, then stopping\n`);
    setTimeout(() => {
      process.stderr.write(`Shutdown took longer than ${SHUTDOWN_GRACE_MS} ms; exiting\n`);
      process.exit(1);
    }, SHUTDOWN_GRACE_MS).unref();
    const server = app.getHttpServer();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Long polls answer now instead of at their deadline, so they do not hold the shutdown up.
    app.get(Draining).start();
    await closed;
    await app.close();
    process.exit(0);
  };
  process.on('SIGTERM', (signal) => void shutdown(signal));
  process.on('SIGINT', (signal) => void shutdown(signal));
}

const SHUTDOWN_GRACE_MS = 30_000;

/**
 * Listens on `port` (0: one the system chooses) without serving, so that no other process takes it while the
 * application is built; rejects when it cannot (taken, or privileged).
 */
function reservePort(port: number): Promise<{ port: number; release(): Promise<void> }> {
  return new Promise((resolve, reject) => {
    // A client that connects meanwhile (a health probe) is cut off at once, as if refused, rather than left waiting.
    const holder = createServer((socket) => socket.destroy());
    holder.once('error', reject);
    holder.listen(port, () =>
      resolve({
        port: (holder.address() as AddressInfo).port,
        release: () => new Promise<void>((released) => holder.close(() => released())),
      }),
    );
  });
}

function failToListen(port: number, error: unknown): never {
  const code = (error as NodeJS.ErrnoException).code;
  const reason =
    code === 'EADDRINUSE' ? 'the port is already in use (another server runs there?)' : code === 'EACCES' ? 'permission denied (a port below 1024 needs privileges)' : String((error as Error).message ?? error);
  process.stderr.write(`Cannot listen on PORT=${port}: ${reason}.\n`);
  process.exit(1);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigurationError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`The service could not start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
