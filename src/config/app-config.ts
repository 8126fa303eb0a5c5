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

  @Transform(emptyToUndefined) @IsOptional() @Matches(/^(\S+\s+){4,5}\S+$/, { message: 'TRASH_PURGE_CRON must be a cron expression with 5 or 6 fields' })
  TRASH_PURGE_CRON?: string;

  @Transform(emptyToUndefined) @IsOptional() @IsBooleanString()
  WEBHOOK_ALLOW_PRIVATE_URLS?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(1000)
  WEBHOOK_DELIVERY_CONCURRENCY?: number;

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

  @Transform(emptyToUndefined) @IsOptional() @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL?: string;
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
  readonly trashPurgeCron: string;
  readonly webhookAllowPrivateUrls: boolean;
  readonly webhookDeliveryConcurrency: number;
  /** Key material for secrets stored encrypted at rest (webhook secrets). */
  readonly secretsEncryptionKey: string;
  readonly admin: { username: string; password: string } | null;
  readonly publicRateLimitPerMinute: number;
  /** Off only for benchmarks and load tests that must not be throttled. */
  readonly rateLimitsEnabled: boolean;
  readonly logLevel: string;

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
    trashPurgeCron: raw.TRASH_PURGE_CRON ?? '*/10 * * * *',
    webhookAllowPrivateUrls: raw.WEBHOOK_ALLOW_PRIVATE_URLS === 'true',
    webhookDeliveryConcurrency: raw.WEBHOOK_DELIVERY_CONCURRENCY ?? 20,
    // A fixed development key (unlike URL_SIGNING_SECRET) so stored webhook secrets survive restarts; production must set its own.
    secretsEncryptionKey: raw.SECRETS_ENCRYPTION_KEY || DEVELOPMENT_SECRETS_ENCRYPTION_KEY,
    admin: raw.ADMIN_USERNAME ? { username: raw.ADMIN_USERNAME, password: raw.ADMIN_PASSWORD ?? '' } : null,
    publicRateLimitPerMinute: raw.PUBLIC_RATE_LIMIT_PER_MINUTE ?? 120,
    rateLimitsEnabled: raw.RATE_LIMITS_ENABLED !== 'false',
    logLevel: raw.LOG_LEVEL ?? (nodeEnv === 'test' ? 'silent' : 'info'),
  });
}
