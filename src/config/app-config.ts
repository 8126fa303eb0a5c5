import { randomBytes } from 'node:crypto';
import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBooleanString,
  IsIn,
  IsInt,
  IsNotEmpty,
  IsNumber,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  MinLength,
  ValidateIf,
  validateSync,
} from 'class-validator';

const toNumber = ({ value }: { value: unknown }) => (value === undefined || value === '' ? undefined : Number(value));
const emptyToUndefined = ({ value }: { value: unknown }) => (value === '' ? undefined : value);

/**
 * The environment as the operator writes it. Property names are the variable names, so a
 * validation message names exactly the variable to fix.
 */
class EnvironmentVariables {
  @IsOptional() @IsIn(['development', 'production', 'test'])
  NODE_ENV?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(0) @Max(65535)
  PORT?: number;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^https?:\/\/[^\s/]+(\/[^\s]*)?$/, { message: 'PUBLIC_BASE_URL must be an http(s) origin such as http://localhost:3000' })
  PUBLIC_BASE_URL?: string;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^(sqlite:.+|postgres(ql)?:\/\/.+)$/, { message: 'DATABASE_URL must be sqlite:<path> or postgres://user:pass@host:5432/db' })
  DATABASE_URL?: string;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^rediss?:\/\/.+/, { message: 'REDIS_URL must look like redis://host:6379[/db]' })
  REDIS_URL?: string;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^[A-Za-z0-9_.-]{1,64}$/, { message: 'REDIS_KEY_PREFIX may hold letters, digits, "_", "." and "-" (1 to 64)' })
  REDIS_KEY_PREFIX?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsIn(['local', 's3'])
  STORAGE_DRIVER?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @IsNotEmpty()
  STORAGE_DIR?: string;

  @ValidateIf((env: EnvironmentVariables) => env.STORAGE_DRIVER === 's3') @IsString() @IsNotEmpty()
  S3_BUCKET?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  S3_ENDPOINT?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  S3_REGION?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  S3_ACCESS_KEY_ID?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString()
  S3_SECRET_ACCESS_KEY?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsBooleanString()
  S3_FORCE_PATH_STYLE?: string;

  @ValidateIf((env: EnvironmentVariables) => env.NODE_ENV === 'production' || (env.URL_SIGNING_SECRET ?? '') !== '')
  @IsString() @MinLength(32, { message: 'URL_SIGNING_SECRET must be set to at least 32 characters when NODE_ENV=production' })
  URL_SIGNING_SECRET?: string;

  @Transform(toNumber) @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(0.000001) @Max(3650)
  TRASH_RETENTION_DAYS?: number;

  @Transform(toNumber) @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(1) @Max(30 * 86_400)
  TUS_UPLOAD_EXPIRY?: number;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^(\S+\s+){4,5}\S+$/, { message: 'TRASH_PURGE_CRON must be a cron expression with 5 or 6 fields' })
  TRASH_PURGE_CRON?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsBooleanString()
  WEBHOOK_ALLOW_PRIVATE_URLS?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(1000)
  WEBHOOK_DELIVERY_CONCURRENCY?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(100) @Max(600_000)
  INSTANCE_HEARTBEAT_MS?: number;

  @ValidateIf((env: EnvironmentVariables) => env.NODE_ENV === 'production' || (env.SECRETS_ENCRYPTION_KEY ?? '') !== '')
  @IsString() @MinLength(32, { message: 'SECRETS_ENCRYPTION_KEY must be set to at least 32 characters when NODE_ENV=production' })
  SECRETS_ENCRYPTION_KEY?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @MinLength(1)
  ADMIN_USERNAME?: string;

  @ValidateIf((env: EnvironmentVariables) => env.ADMIN_USERNAME !== undefined && env.ADMIN_USERNAME !== '')
  @IsString() @MinLength(8, { message: 'ADMIN_PASSWORD must be at least 8 characters when ADMIN_USERNAME is set' })
  ADMIN_PASSWORD?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(1_000_000)
  PUBLIC_RATE_LIMIT_PER_MINUTE?: number;

  @Transform(emptyToUndefined) @IsOptional() @IsBooleanString()
  RATE_LIMITS_ENABLED?: string;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^(true|false|\d{1,2}|[0-9a-fA-F.:/,\s]+|loopback|linklocal|uniquelocal)$/, {
    message: 'TRUST_PROXY must be true, false, a hop count, or a comma-separated list of proxy addresses/subnets',
  })
  TRUST_PROXY?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL?: string;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^[A-Za-z0-9.:[\]-]{1,255}$/, { message: 'CLAMAV_HOST must be a host name or IP address of clamd' })
  CLAMAV_HOST?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(65535)
  CLAMAV_PORT?: number;

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^\/\S+$/, { message: 'CLAMAV_SOCKET must be an absolute path to clamd\'s UNIX socket' })
  CLAMAV_SOCKET?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1000) @Max(3_600_000)
  CLAMAV_TIMEOUT_MS?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1)
  CLAMAV_MAX_STREAM_BYTES?: number;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @IsNotEmpty()
  FFMPEG_PATH?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsString() @IsNotEmpty()
  PDFTOPPM_PATH?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(64)
  THUMBNAIL_CONCURRENCY?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(256)
  SCAN_CONCURRENCY?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1_000_000) @Max(1_000_000_000)
  THUMBNAIL_MAX_INPUT_PIXELS?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1000) @Max(600_000)
  THUMBNAIL_TIMEOUT_MS?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(64) @Max(65536)
  THUMBNAIL_TOOL_MEMORY_MB?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(10) @Max(3_600_000)
  MEDIA_RETRY_DELAY_MS?: number;
}

/** Used only outside production, where SECRETS_ENCRYPTION_KEY is required. Public, so it protects nothing. */
export const DEVELOPMENT_SECRETS_ENCRYPTION_KEY = 'insecure-development-only-secrets-encryption-key';

export type DatabaseConfig =
  | { kind: 'sqlite'; path: string }
  | { kind: 'postgres'; url: string };

/** Typed, validated configuration shared by the server, the CLI and the workers. */
export class AppConfig {
  readonly nodeEnv: 'development' | 'production' | 'test';
  readonly port: number;
  readonly publicBaseUrl: string;
  readonly database: DatabaseConfig;
  readonly redisUrl: string;
  readonly redisKeyPrefix: string;
  readonly storage: {
    driver: 'local' | 's3';
    dir: string;
    s3: { endpoint?: string; bucket?: string; region?: string; accessKeyId?: string; secretAccessKey?: string; forcePathStyle: boolean };
  };
  readonly urlSigningSecret: string;
  readonly trashRetentionDays: number;
  /** How long a resumable upload may sit idle before the expiry job removes it. */
  readonly resumableUploadExpiryMs: number;
  readonly trashPurgeCron: string;
  readonly webhookAllowPrivateUrls: boolean;
  readonly webhookDeliveryConcurrency: number;
  /** How often a server process proves it is alive; one silent for 3 beats is dead and its uploads are reclaimed. */
  readonly instanceHeartbeatMs: number;
  /** Key material for secrets stored encrypted at rest (webhook secrets). */
  readonly secretsEncryptionKey: string;
  readonly admin: { username: string; password: string } | null;
  readonly publicRateLimitPerMinute: number;
  /** Off only for benchmarks and load tests that must not be throttled. */
  readonly rateLimitsEnabled: boolean;
  /** Express `trust proxy`: which proxies' X-Forwarded-For to believe for the client IP. */
  readonly trustProxy: boolean | number | string;
  readonly logLevel: string;
  /** clamd's address; null means no scanner is configured and files are marked scan_status skipped. */
  readonly clamav: (({ socket: string } | { host: string; port: number }) & { timeoutMs: number; maxStreamBytes: number }) | null;
  readonly media: {
    ffmpegPath: string;
    pdftoppmPath: string;
    thumbnailConcurrency: number;
    scanConcurrency: number;
    maxInputPixels: number;
    toolTimeoutMs: number;
    toolMemoryMb: number;
    /** First retry delay of a transiently failed job; each further retry waits twice as long. */
    retryDelayMs: number;
  };

  constructor(values: Omit<AppConfig, never>) {
    Object.assign(this, values);
  }
}

export class ConfigurationError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigurationError';
  }
}

function parseTrustProxy(value: string | undefined): boolean | number | string {
  if (value === undefined || value === 'false') return false;
  if (value === 'true') return true;
  return /^\d+$/.test(value) ? Number(value) : value;
}

export function parseDatabaseUrl(url: string): DatabaseConfig {
  if (url.startsWith('sqlite:')) return { kind: 'sqlite', path: url.slice('sqlite:'.length) };
  return { kind: 'postgres', url };
}

/** Reads and validates the environment; throws a ConfigurationError naming every bad variable. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const raw = plainToInstance(EnvironmentVariables, { ...env }, { excludeExtraneousValues: false });
  const errors = validateSync(raw, { skipMissingProperties: false, forbidUnknownValues: false });
  if (errors.length > 0) {
    throw new ConfigurationError(
      errors.map((e) => {
        const messages = Object.values(e.constraints ?? {});
        const shown = typeof e.value === 'string' && !/SECRET|PASSWORD/.test(e.property) ? ` (got "${e.value}")` : '';
        return `${e.property}: ${messages.join('; ')}${shown}`;
      }),
    );
  }
  const nodeEnv = (raw.NODE_ENV ?? 'development') as AppConfig['nodeEnv'];
  return new AppConfig({
    nodeEnv,
    port: raw.PORT ?? 3000,
    publicBaseUrl: (raw.PUBLIC_BASE_URL ?? 'http://localhost:3000').replace(/\/+$/, ''),
    database: parseDatabaseUrl(raw.DATABASE_URL ?? 'sqlite:./data/storage.sqlite'),
    redisUrl: raw.REDIS_URL ?? 'redis://127.0.0.1:6379',
    redisKeyPrefix: raw.REDIS_KEY_PREFIX ?? 'fss',
    storage: {
      driver: (raw.STORAGE_DRIVER ?? 'local') as 'local' | 's3',
      dir: raw.STORAGE_DIR ?? './data/blobs',
      s3: {
        endpoint: raw.S3_ENDPOINT,
        bucket: raw.S3_BUCKET,
        region: raw.S3_REGION ?? 'us-east-1',
        accessKeyId: raw.S3_ACCESS_KEY_ID,
        secretAccessKey: raw.S3_SECRET_ACCESS_KEY,
        forcePathStyle: raw.S3_FORCE_PATH_STYLE === 'true',
      },
    },
    // A random per-process secret in development means download links die with the process, which is the safe default.
    urlSigningSecret: raw.URL_SIGNING_SECRET || randomBytes(32).toString('hex'),
    trashRetentionDays: raw.TRASH_RETENTION_DAYS ?? 30,
    resumableUploadExpiryMs: (raw.TUS_UPLOAD_EXPIRY ?? 86_400) * 1000,
    trashPurgeCron: raw.TRASH_PURGE_CRON ?? '*/10 * * * *',
    webhookAllowPrivateUrls: raw.WEBHOOK_ALLOW_PRIVATE_URLS === 'true',
    webhookDeliveryConcurrency: raw.WEBHOOK_DELIVERY_CONCURRENCY ?? 100,
    instanceHeartbeatMs: raw.INSTANCE_HEARTBEAT_MS ?? 10_000,
    // A fixed development key (unlike URL_SIGNING_SECRET) so stored webhook secrets survive restarts; production must set its own.
    secretsEncryptionKey: raw.SECRETS_ENCRYPTION_KEY || DEVELOPMENT_SECRETS_ENCRYPTION_KEY,
    admin: raw.ADMIN_USERNAME ? { username: raw.ADMIN_USERNAME, password: raw.ADMIN_PASSWORD ?? '' } : null,
    publicRateLimitPerMinute: raw.PUBLIC_RATE_LIMIT_PER_MINUTE ?? 120,
    rateLimitsEnabled: raw.RATE_LIMITS_ENABLED !== 'false',
    trustProxy: parseTrustProxy(raw.TRUST_PROXY),
    logLevel: raw.LOG_LEVEL ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    clamav: raw.CLAMAV_SOCKET || raw.CLAMAV_HOST
      ? {
          ...(raw.CLAMAV_SOCKET ? { socket: raw.CLAMAV_SOCKET } : { host: raw.CLAMAV_HOST!, port: raw.CLAMAV_PORT ?? 3310 }),
          timeoutMs: raw.CLAMAV_TIMEOUT_MS ?? 120_000,
          // clamd's own default StreamMaxLength.
          maxStreamBytes: raw.CLAMAV_MAX_STREAM_BYTES ?? 25 * 1024 * 1024,
        }
      : null,
    media: {
      ffmpegPath: raw.FFMPEG_PATH ?? 'ffmpeg',
      pdftoppmPath: raw.PDFTOPPM_PATH ?? 'pdftoppm',
      thumbnailConcurrency: raw.THUMBNAIL_CONCURRENCY ?? 2,
      scanConcurrency: raw.SCAN_CONCURRENCY ?? 4,
      maxInputPixels: raw.THUMBNAIL_MAX_INPUT_PIXELS ?? 100_000_000,
      toolTimeoutMs: raw.THUMBNAIL_TIMEOUT_MS ?? 30_000,
      toolMemoryMb: raw.THUMBNAIL_TOOL_MEMORY_MB ?? 2048,
      retryDelayMs: raw.MEDIA_RETRY_DELAY_MS ?? 5_000,
    },
  });
}
