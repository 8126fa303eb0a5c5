import 'reflect-metadata';
import { ConfigurationError, loadConfig } from './config/app-config.js';
import { createApp } from './app.factory.js';
import { probeRedis } from './infra/redis/redis.module.js';

async function main(): Promise<void> {
  const config = loadConfig();
  const redisProblem = await probeRedis(config.redisUrl);
  if (redisProblem) {
    process.stderr.write(
      `Cannot reach Redis at REDIS_URL=${config.redisUrl} (${redisProblem}).\n` +
        'Start Redis (for example: redis-server --daemonize yes) or point REDIS_URL at a running one.\n',
    );
    process.exit(1);
  }
  const app = await createApp(config);
  await app.listen(config.port);
  process.stdout.write(`File storage service listening on ${config.publicBaseUrl} (port ${config.port}); API docs at ${config.publicBaseUrl}/docs\n`);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigurationError) {
    process.stderr.write(`${error.message}\n`);
  } else {
    process.stderr.write(`The service could not start: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  }
  process.exit(1);
});
