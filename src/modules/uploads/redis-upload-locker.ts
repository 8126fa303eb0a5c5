import { randomUUID } from 'node:crypto';
import { HttpStatus, Inject, Injectable } from '@nestjs/common';
import { ERRORS, type Lock, type Locker } from '@tus/utils';
import { Redis } from 'ioredis';
import { ApiError } from '../../common/errors/api-error.js';
import { AppConfig } from '../../config/app-config.js';
import { REDIS } from '../../infra/redis/redis.module.js';

/**
 * A lock lives this long unless its holder renews it; renewed every third of that while held. A
 * killed process's lock so blocks its upload for at most this long.
 */
const LOCK_TTL_MS = 15_000;
/** How long a request waits for an upload another request holds before it is refused with 423. */
const ACQUIRE_WAIT_MS = 3_000;
const RETRY_EVERY_MS = 50;

/** Deletes the key only if it still holds our token: a lock that expired and was taken since is not ours to free. */
const RELEASE_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end`;
const RENEW_SCRIPT = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end`;

export class UploadLocked extends ApiError {
  constructor(uploadId: string) {
    super(HttpStatus.LOCKED, 'conflict', `Upload ${uploadId} is being written by another request; retry once it has ended.`, { upload_id: uploadId });
  }
}

/**
 * @tus/server's Locker extension point, across processes: one Redis key per upload (SET NX with an
 * expiry, renewed while held). Two requests to one upload never interleave bytes, whichever server
 * process they reach; the one that finds the upload taken waits briefly, then gets 423 (tus clients
 * retry it). Unlike @tus/server's MemoryLocker it does not ask the holder to let go: the holder is
 * usually a connection the client already dropped, which ends by itself.
 */
@Injectable()
export class RedisUploadLocker implements Locker {
  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly config: AppConfig,
  ) {}

  newLock(uploadId: string): Lock {
    return new RedisUploadLock(this.redis, `${this.config.redisKeyPrefix}:upload-lock:${uploadId}`, uploadId);
  }

  /** Runs `work` holding the upload's lock. */
  async holding<T>(uploadId: string, work: () => Promise<T>): Promise<T> {
    const lock = this.newLock(uploadId);
    await lock.lock(new AbortController().signal, () => undefined);
    try {
      return await work();
    } finally {
      await lock.unlock();
    }
  }
}

class RedisUploadLock implements Lock {
  private readonly token = randomUUID();
  private renewal: NodeJS.Timeout | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly key: string,
    private readonly uploadId: string,
  ) {}

  async lock(signal: AbortSignal): Promise<void> {
    const deadline = Date.now() + ACQUIRE_WAIT_MS;
    for (;;) {
      if (signal.aborted) throw ERRORS.ABORTED;
      if ((await this.redis.set(this.key, this.token, 'PX', LOCK_TTL_MS, 'NX')) === 'OK') break;
      if (Date.now() >= deadline) throw new UploadLocked(this.uploadId);
      await new Promise((resolve) => setTimeout(resolve, RETRY_EVERY_MS));
    }
    this.renewal = setInterval(() => {
      this.redis.eval(RENEW_SCRIPT, 1, this.key, this.token, LOCK_TTL_MS).catch(() => undefined);
    }, LOCK_TTL_MS / 3);
    this.renewal.unref();
  }

  async unlock(): Promise<void> {
    if (this.renewal) clearInterval(this.renewal);
    this.renewal = null;
    // If Redis is away the key expires by itself.
    await this.redis.eval(RELEASE_SCRIPT, 1, this.key, this.token).catch(() => undefined);
  }
}
