import { Global, Inject, Injectable, Module, OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../../config/app-config.js';
import { describeConnectionError } from '../connection-error.js';

export const REDIS = Symbol('REDIS');

/**
 * The shared Redis connection for rate-limit counters and health checks. It fails fast instead of
 * queueing commands while Redis is away, so no request waits on an absent Redis.
 */
export function createRedisClient(config: AppConfig): Redis {
  return new Redis(config.redisUrl, {
    lazyConnect: false,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 1000,
    connectTimeout: 2000,
    retryStrategy: (attempt) => Math.min(attempt * 200, 2000),
  });
}

@Injectable()
class RedisCloser implements OnApplicationShutdown {
  constructor(@Inject(REDIS) private readonly redis: Redis) {}

  async onApplicationShutdown(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

@Global()
@Module({
  providers: [
    {
      provide: REDIS,
      inject: [AppConfig],
      useFactory: async (config: AppConfig) => {
        const client = createRedisClient(config);
        // Errors surface through failed commands; the event only needs a listener so it is not thrown.
        client.on('error', () => undefined);
        // Commands are not queued while connecting, so wait (briefly) until the connection is ready.
        await Promise.race([new Promise((resolve) => client.once('ready', resolve)), new Promise((resolve) => setTimeout(resolve, 3000).unref())]);
        return client;
      },
    },
    RedisCloser,
  ],
  exports: [REDIS],
})
export class RedisModule {}

/** Answers within `timeoutMs` whether Redis at REDIS_URL takes commands; used before the service starts. */
export async function probeRedis(redisUrl: string, timeoutMs = 3000): Promise<string | null> {
  const client = new Redis(redisUrl, { lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, connectTimeout: timeoutMs, retryStrategy: () => null });
  // Without retries, connect() only rejects with "Connection is closed."; why it closed (a refused connection, a
  // host name that does not resolve, TLS) comes as an event before that.
  let connectionError: Error | null = null;
  client.on('error', (error: Error) => (connectionError ??= error));
  try {
    await client.connect();
    // ioredis only reports a failed SELECT of the URL's database (/99 beyond `databases`) as an event, then carries on
    // in database 0, beside whatever lives there: asked for here, it fails. (Only when one is named: some proxies
    // and managed services have no SELECT.)
    if (client.options.db) await client.select(client.options.db);
    await client.ping();
    return null;
  } catch (error) {
    return describeConnectionError((connectionError as Error | null) ?? error);
  } finally {
    client.disconnect();
  }
}
