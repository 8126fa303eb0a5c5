import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { existsSync, linkSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parseEnv } from 'node:util';
import { plainToInstance, Transform } from 'class-transformer';
import { validateCronExpression } from 'cron';
import {
  IsBoolean,
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
  ValidateBy,
  ValidateIf,
  validateSync,
} from 'class-validator';

/** Placeholders from examples and compose files (`change-me…`), refused as secrets in production. */
const PLACEHOLDER_SECRET = /change[-_ ]?me|replace[-_ ]?me|placeholder|your[-_ ]?(secret|key|password)|^(secret|password|admin|test)$/i;
const notPlaceholderInProduction = (name: string) =>
  ValidateBy({
    name: 'notPlaceholder',
    validator: {
      validate: (value: unknown, args) =>
        (args?.object as EnvironmentVariables).NODE_ENV !== 'production' || typeof value !== 'string' || !PLACEHOLDER_SECRET.test(value),
      defaultMessage: () => `${name} is a placeholder (such as "change-me..."); set a long random value when NODE_ENV=production`,
    },
  });

/**
 * A URL as the client that uses it reads it (WHATWG URL: a port above 65535 or a stray bracket is an error), so a
 * malformed one is refused here, naming its variable, rather than failing later inside a driver with a stack trace.
 */
const isUrl = (message: string, accepts: (url: URL) => boolean) =>
  ValidateBy({
    name: 'isUrl',
    validator: {
      validate: (value: unknown) => {
        if (typeof value !== 'string' || /\s/.test(value)) return false;
        const url = parsedUrl(value);
        return url !== null && value.toLowerCase().startsWith(`${url.protocol}//`) && accepts(url);
      },
      defaultMessage: () => message,
    },
  });

function parsedUrl(value: string): URL | null {
  try {
    return new URL(value);
  } catch {
    // node-postgres reads `postgres://user@/db?host=/socket/dir` (no host before the path) the same way.
    return value.includes('@/') ? parsedUrl(value.replace('@/', '@localhost/')) : null;
  }
}

/** One entry of a TRUST_PROXY list as Express (proxy-addr) reads it: a named range, an address, address/prefix or IPv4 address/netmask. */
function isProxyAddress(entry: string): boolean {
  if (['loopback', 'linklocal', 'uniquelocal'].includes(entry)) return true;
  const [address, range, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (range === undefined) return true;
  if (/^\d{1,3}$/.test(range)) return Number(range) <= (family === 4 ? 32 : 128);
  return family === 4 && isIP(range) === 4;
}

/** Checked here: Express would throw its own TypeError, with a stack trace, while the server starts. */
const isTrustProxy = () =>
  ValidateBy({
    name: 'isTrustProxy',
    validator: {
      validate: (value: unknown) =>
        typeof value === 'string' &&
        (/^(true|false|\d{1,2})$/.test(value.trim()) || value.split(',').every((entry) => isProxyAddress(entry.trim()))),
      defaultMessage: () => 'TRUST_PROXY must be true, false, a hop count, or a comma-separated list of proxy addresses or subnets (such as 10.0.0.0/8, loopback)',
    },
  });

const isCronExpression = () =>
  ValidateBy({
    name: 'isCronExpression',
    validator: {
      // Checked by the cron library that runs the purge: each field in its range.
      validate: (value: unknown) => typeof value === 'string' && /^(\S+\s+){4,5}\S+$/.test(value) && validateCronExpression(value).valid,
      defaultMessage: () => 'TRASH_PURGE_CRON must be a cron expression with 5 or 6 fields, each in its range (such as */10 * * * *)',
    },
  });

/** Empty or only spaces: the variable counts as unset (see loadConfig). */
const isBlank = (value: unknown) => typeof value === 'string' && value.trim() === '';
/** Decimal notation only (`Number()` alone reads "0x50" as 80 and "0b11" as 3); anything else is NaN, and refused by name. */
const DECIMAL = /^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i;
const toNumber = ({ value }: { value: unknown }) => {
  if (value === undefined) return undefined;
  return typeof value === 'string' && DECIMAL.test(value.trim()) ? Number(value.trim()) : Number.NaN;
};
/** `true`/`1` and `false`/`0`; anything else stays a string, which IsBoolean refuses by name. */
const toBoolean = ({ value }: { value: unknown }) => {
  if (value === undefined) return undefined;
  const word = String(value).trim();
  return word === 'true' || word === '1' ? true : word === 'false' || word === '0' ? false : value;
};
const isTrueOrFalse = (name: string) => IsBoolean({ message: `${name} must be true or false (or 1 or 0)` });

/**
 * The environment as the operator writes it. Property names are the variable names, so a
 * validation message names exactly the variable to fix.
 */
export class EnvironmentVariables {
  @IsOptional() @IsIn(['development', 'production', 'test'])
  NODE_ENV?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(0) @Max(65535)
  PORT?: number;

  @IsOptional()
  @isUrl('PUBLIC_BASE_URL must be an http(s) origin such as http://localhost:3000, with a path prefix at most', (url) =>
    ['http:', 'https:'].includes(url.protocol) && url.search === '' && url.hash === '' && url.username === '' && url.password === '')
  PUBLIC_BASE_URL?: string;

  @IsOptional()
  @ValidateIf((env: EnvironmentVariables) => !/^sqlite:./.test(env.DATABASE_URL ?? ''))
  @isUrl('DATABASE_URL must be sqlite:<path> or postgres://user:pass@host:5432/db', (url) => ['postgres:', 'postgresql:'].includes(url.protocol))
  DATABASE_URL?: string;

  @IsOptional()
  @isUrl('REDIS_URL must look like redis://host:6379[/db]', (url) => ['redis:', 'rediss:'].includes(url.protocol) && url.hostname !== '')
  REDIS_URL?: string;

  @IsOptional() @Matches(/^[A-Za-z0-9_.-]{1,64}$/, { message: 'REDIS_KEY_PREFIX may hold letters, digits, "_", "." and "-" (1 to 64)' })
  REDIS_KEY_PREFIX?: string;

  @IsOptional() @IsIn(['local', 's3'])
  STORAGE_DRIVER?: string;

  @IsOptional() @IsString() @IsNotEmpty()
  STORAGE_DIR?: string;

  @ValidateIf((env: EnvironmentVariables) => env.STORAGE_DRIVER === 's3')
  @IsString({ message: 'S3_BUCKET must be set when STORAGE_DRIVER=s3' }) @IsNotEmpty({ message: 'S3_BUCKET must be set when STORAGE_DRIVER=s3' })
  S3_BUCKET?: string;

  @IsOptional() @isUrl('S3_ENDPOINT must be an http(s) URL such as https://s3.example.com', (url) => ['http:', 'https:'].includes(url.protocol))
  S3_ENDPOINT?: string;

  @IsOptional() @IsString()
  S3_REGION?: string;

  @IsOptional() @IsString()
  S3_ACCESS_KEY_ID?: string;

  @IsOptional() @IsString()
  S3_SECRET_ACCESS_KEY?: string;

  @Transform(toBoolean) @IsOptional() @isTrueOrFalse('S3_FORCE_PATH_STYLE')
  S3_FORCE_PATH_STYLE?: boolean;

  @ValidateIf((env: EnvironmentVariables) => env.NODE_ENV === 'production' || (env.URL_SIGNING_SECRET ?? '') !== '')
  @IsString({ message: 'URL_SIGNING_SECRET must be set to at least 32 characters when NODE_ENV=production' })
  @MinLength(32, { message: 'URL_SIGNING_SECRET must be set to at least 32 characters when NODE_ENV=production' })
  @notPlaceholderInProduction('URL_SIGNING_SECRET')
  URL_SIGNING_SECRET?: string;

  @Transform(toNumber) @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(0.000001) @Max(3650)
  TRASH_RETENTION_DAYS?: number;

  @Transform(toNumber) @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(1) @Max(30 * 86_400)
  TUS_UPLOAD_EXPIRY?: number;

  @Transform(toNumber) @IsOptional() @IsNumber({ allowNaN: false, allowInfinity: false }) @Min(0.000001) @Max(3650)
  EVENT_RETENTION_DAYS?: number;

  @IsOptional() @isCronExpression()
  TRASH_PURGE_CRON?: string;

  @Transform(toBoolean) @IsOptional() @isTrueOrFalse('WEBHOOK_ALLOW_PRIVATE_URLS')
  WEBHOOK_ALLOW_PRIVATE_URLS?: boolean;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(1000)
  WEBHOOK_DELIVERY_CONCURRENCY?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(100) @Max(600_000)
  INSTANCE_HEARTBEAT_MS?: number;

  @ValidateIf((env: EnvironmentVariables) => env.NODE_ENV === 'production' || (env.SECRETS_ENCRYPTION_KEY ?? '') !== '')
  @IsString({ message: 'SECRETS_ENCRYPTION_KEY must be set to at least 32 characters when NODE_ENV=production' })
  @MinLength(32, { message: 'SECRETS_ENCRYPTION_KEY must be set to at least 32 characters when NODE_ENV=production' })
  @notPlaceholderInProduction('SECRETS_ENCRYPTION_KEY')
  SECRETS_ENCRYPTION_KEY?: string;

  // A password alone would leave the dashboard off without a word, though its operator meant to turn it on.
  @ValidateIf((env: EnvironmentVariables) => env.ADMIN_USERNAME !== undefined || (env.ADMIN_PASSWORD ?? '') !== '')
  @IsString({ message: 'ADMIN_USERNAME must be set when ADMIN_PASSWORD is (both turn on the queue dashboard)' })
  ADMIN_USERNAME?: string;

  @ValidateIf((env: EnvironmentVariables) => env.ADMIN_USERNAME !== undefined && env.ADMIN_USERNAME !== '')
  @IsString({ message: 'ADMIN_PASSWORD must be at least 8 characters when ADMIN_USERNAME is set' })
  @MinLength(8, { message: 'ADMIN_PASSWORD must be at least 8 characters when ADMIN_USERNAME is set' })
  @notPlaceholderInProduction('ADMIN_PASSWORD')
  ADMIN_PASSWORD?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(1_000_000)
  PUBLIC_RATE_LIMIT_PER_MINUTE?: number;

  @Transform(toBoolean) @IsOptional() @isTrueOrFalse('RATE_LIMITS_ENABLED')
  RATE_LIMITS_ENABLED?: boolean;

  @IsOptional() @isTrustProxy()
  TRUST_PROXY?: string;

  @IsOptional() @IsIn(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
  LOG_LEVEL?: string;

  @IsOptional() @Matches(/^[A-Za-z0-9.:[\]-]{1,255}$/, { message: 'CLAMAV_HOST must be a host name or IP address of clamd' })
  CLAMAV_HOST?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(65535)
  CLAMAV_PORT?: number;

  @IsOptional() @Matches(/^\/\S+$/, { message: 'CLAMAV_SOCKET must be an absolute path to clamd\'s UNIX socket' })
  CLAMAV_SOCKET?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1000) @Max(3_600_000)
  CLAMAV_TIMEOUT_MS?: number;

  // clamd's own StreamMaxLength stops at 4 GiB.
  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(4 * 1024 ** 3)
  CLAMAV_MAX_STREAM_BYTES?: number;

  @IsOptional() @IsString() @IsNotEmpty()
  FFMPEG_PATH?: string;

  @IsOptional() @IsString() @IsNotEmpty()
  PDFTOPPM_PATH?: string;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(64)
  THUMBNAIL_CONCURRENCY?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(256)
  SCAN_CONCURRENCY?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1_000_000) @Max(1_000_000_000)
  THUMBNAIL_MAX_INPUT_PIXELS?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(16) @Max(65536)
  THUMBNAIL_MAX_DECODE_MB?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1000) @Max(600_000)
  THUMBNAIL_TIMEOUT_MS?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(64) @Max(65536)
  THUMBNAIL_TOOL_MEMORY_MB?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(10) @Max(3_600_000)
  MEDIA_RETRY_DELAY_MS?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(0) @Max(300)
  API_KEY_CACHE_SECONDS?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(3600)
  HTTP_IDLE_TIMEOUT_SECONDS?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(3600)
  HTTP_HEADERS_TIMEOUT_SECONDS?: number;

  @Transform(toNumber) @IsOptional() @IsInt() @Min(1) @Max(300)
  HTTP_LINGER_SECONDS?: number;
}

/** Where a development installation keeps the secrets it generated for itself, next to its data (relative to the working directory). */
export const DEVELOPMENT_SECRETS_FILE = 'data/development-secrets.json';

const GENERATED_SECRETS = ['URL_SIGNING_SECRET', 'SECRETS_ENCRYPTION_KEY'] as const;
type GeneratedSecret = (typeof GENERATED_SECRETS)[number];

/** Where Debian's clamav-daemon listens; used when neither CLAMAV_SOCKET nor CLAMAV_HOST is set. */
export const DEBIAN_CLAMD_SOCKET = '/run/clamav/clamd.ctl';

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
  /** How long events stay in the event feed (GET /v1/events) and can be replayed to webhooks. */
  readonly eventRetentionDays: number;
  /** How long a resumable upload may sit idle before the expiry job removes it. */
  readonly resumableUploadExpiryMs: number;
  readonly trashPurgeCron: string;
  readonly webhookAllowPrivateUrls: boolean;
  readonly webhookDeliveryConcurrency: number;
  /** How often a server process proves it is alive; one silent for 3 beats is dead and its uploads are reclaimed. */
  readonly instanceHeartbeatMs: number;
  /** Key material for secrets stored encrypted at rest (webhook secrets). */
  readonly secretsEncryptionKey: string;
  /** In development, the secrets that were not set and come from DEVELOPMENT_SECRETS_FILE instead (said at start-up). */
  readonly developmentSecrets: { file: string; names: GeneratedSecret[]; created: boolean } | null;
  readonly admin: { username: string; password: string } | null;
  readonly publicRateLimitPerMinute: number;
  /** Off only for benchmarks and load tests that must not be throttled. */
  readonly rateLimitsEnabled: boolean;
  /** Express `trust proxy`: which proxies' X-Forwarded-For to believe for the client IP. */
  readonly trustProxy: boolean | number | string;
  readonly logLevel: string;
  /**
   * clamd's address: CLAMAV_SOCKET or CLAMAV_HOST (`configured`), else Debian's default socket, used only when a
   * clamd listens there at start-up (see virus-scanner.provider.ts).
   */
  readonly clamav: ({ socket: string } | { host: string; port: number }) & { configured: boolean; timeoutMs: number; maxStreamBytes: number };
  readonly media: {
    ffmpegPath: string;
    pdftoppmPath: string;
    thumbnailConcurrency: number;
    scanConcurrency: number;
    maxInputPixels: number;
    /** Memory an image that cannot be decoded in strips (GIF, interlaced PNG, progressive JPEG, AVIF) may need, in MB. */
    maxDecodeMb: number;
    toolTimeoutMs: number;
    toolMemoryMb: number;
    /** First retry delay of a transiently failed job; each further retry waits twice as long. */
    retryDelayMs: number;
  };
  /**
   * How long a server process may reuse an API key lookup; revocations reach every process at once through
   * Redis (api-key-cache.ts). 0 looks every key up on every request.
   */
  readonly apiKeyCacheMs: number;
  /** A connection that sends or takes no bytes this long is closed; a slow transfer that keeps moving never is. */
  readonly httpIdleTimeoutMs: number;
  /** The whole request head (request line and headers) must arrive within this. */
  readonly httpHeadersTimeoutMs: number;
  /** How long the rest of a body keeps being read after its request was answered (http-server-limits.ts). */
  readonly httpLingerMs: number;

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
  const written = value?.trim();
  if (written === undefined || written === 'false') return false;
  if (written === 'true') return true;
  // Express splits on commas but would read a space before an address as part of it.
  return /^\d+$/.test(written) ? Number(written) : written.split(',').map((entry) => entry.trim()).join(',');
}

/** A URL fit for a message or a log: the password of `scheme://user:password@host` masked, even in a malformed one. */
export function withoutPassword(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^/@:]*:).*@/i, '$1***@');
}

/** PUBLIC_BASE_URL when it is not set: this machine, on PORT. */
function defaultPublicBaseUrl(port: number): string {
  return `http://localhost:${port}`;
}

/**
 * The configuration of a server given PORT=0, once the system has chosen its port: links (download_url, share url)
 * built from the default PUBLIC_BASE_URL name that port, not port 0, which no client can reach.
 */
export function onChosenPort(config: AppConfig, port: number): AppConfig {
  const publicBaseUrl = config.publicBaseUrl === defaultPublicBaseUrl(config.port) ? defaultPublicBaseUrl(port) : config.publicBaseUrl;
  return new AppConfig({ ...config, port, publicBaseUrl });
}

export function parseDatabaseUrl(url: string): DatabaseConfig {
  if (url.startsWith('sqlite:')) return { kind: 'sqlite', path: url.slice('sqlite:'.length) };
  return { kind: 'postgres', url };
}

/**
 * The environment of this process, after `.env` in the working directory when there is one; variables
 * already set win over the file.
 */
function processEnvironment(): NodeJS.ProcessEnv {
  if (!existsSync('.env')) return process.env;
  let text: string;
  try {
    text = readFileSync('.env', 'utf8');
  } catch (error) {
    // Unreadable (permissions) or a directory: named like a bad variable, not as a crash with a stack trace.
    throw new ConfigurationError([`.env: ${resolve('.env')} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}); fix or remove it`]);
  }
  // As process.loadEnvFile reads it, which reports an unreadable file as missing.
  for (const [name, value] of Object.entries(parseEnv(text))) if (process.env[name] === undefined) process.env[name] = value;
  return process.env;
}

/**
 * The development secrets kept in DEVELOPMENT_SECRETS_FILE, made on first use, so signed links and
 * sealed webhook secrets survive restarts. Every installation makes its own: nothing public protects it.
 */
function keptDevelopmentSecrets(): { secrets: Record<GeneratedSecret, string>; file: string; created: boolean } {
  const file = resolve(DEVELOPMENT_SECRETS_FILE);
  const generated = Object.fromEntries(GENERATED_SECRETS.map((name) => [name, randomBytes(32).toString('hex')])) as Record<GeneratedSecret, string>;
  mkdirSync(dirname(file), { recursive: true });
  // Written aside, then linked into place: of two processes starting at once (server and CLI), one
  // creates the file and the other reads it whole, never half-written.
  const draft = `${file}.${process.pid}.tmp`;
  writeFileSync(draft, `${JSON.stringify(generated, null, 2)}\n`, { mode: 0o600 });
  try {
    linkSync(draft, file);
    return { secrets: generated, file, created: true };
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  } finally {
    rmSync(draft, { force: true });
  }
  let kept: Partial<Record<GeneratedSecret, unknown>> = {};
  try {
    kept = JSON.parse(readFileSync(file, 'utf8')) as typeof kept;
  } catch {
    // Reported below, naming the file.
  }
  const bad = GENERATED_SECRETS.filter((name) => typeof kept[name] !== 'string' || (kept[name] as string).length < 32);
  if (bad.length > 0) {
    throw new ConfigurationError([`${file} must hold ${bad.join(' and ')} (32+ characters each); set them in the environment, or delete the file to generate new ones`]);
  }
  return { secrets: kept as Record<GeneratedSecret, string>, file, created: false };
}

/**
 * Reads and validates the configuration; throws a ConfigurationError naming every bad variable.
 * Without `env` (the server and the CLI), reads the process environment after `.env`, and in
 * development keeps unset secrets in DEVELOPMENT_SECRETS_FILE; with `env`, touches no file.
 */
export function loadConfig(env?: NodeJS.ProcessEnv): AppConfig {
  const ofThisProcess = env === undefined;
  // A variable set to nothing or only spaces is unset, for every rule alike: its default applies, and a required one
  // is missing (a production secret of spaces would otherwise pass its length check and sign every link).
  const source = Object.fromEntries(Object.entries(env ?? processEnvironment()).filter(([, value]) => !isBlank(value)));
  const raw = plainToInstance(EnvironmentVariables, source, { excludeExtraneousValues: false });
  const errors = validateSync(raw, { skipMissingProperties: false, forbidUnknownValues: false });
  if (errors.length > 0) {
    throw new ConfigurationError(
      errors.map((e) => {
        const constraints = Object.entries(e.constraints ?? {});
        // Not a number at all: its range ("must not be less than 0") would only confuse.
        const notANumber = Number.isNaN(e.value) ? constraints.filter(([name]) => name === 'isInt' || name === 'isNumber') : [];
        const messages = (notANumber.length > 0 ? notANumber : constraints).map(([, message]) => message);
        // What the operator wrote, not what it was parsed into (a number variable set to "0x50" reads as NaN).
        const written = source[e.property];
        const shown = typeof written === 'string' && !/SECRET|PASSWORD/.test(e.property) ? ` (got "${withoutPassword(written)}")` : '';
        // A missing value fails IsString and MinLength alike, with one message.
        return `${e.property}: ${[...new Set(messages)].join('; ')}${shown}`;
      }),
    );
  }
  const nodeEnv = (raw.NODE_ENV ?? 'development') as AppConfig['nodeEnv'];
  const port = raw.PORT ?? 3000;
  const unsetSecrets = GENERATED_SECRETS.filter((name) => !raw[name]);
  const kept = ofThisProcess && nodeEnv === 'development' && unsetSecrets.length > 0 ? keptDevelopmentSecrets() : null;
  // Elsewhere (tests, and explicit environments) an unset secret is random for this process only.
  const secret = (name: GeneratedSecret) => raw[name] || kept?.secrets[name] || randomBytes(32).toString('hex');
  return new AppConfig({
    nodeEnv,
    port,
    publicBaseUrl: (raw.PUBLIC_BASE_URL ?? defaultPublicBaseUrl(port)).replace(/\/+$/, ''),
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
        forcePathStyle: raw.S3_FORCE_PATH_STYLE === true,
      },
    },
    urlSigningSecret: secret('URL_SIGNING_SECRET'),
    trashRetentionDays: raw.TRASH_RETENTION_DAYS ?? 30,
    eventRetentionDays: raw.EVENT_RETENTION_DAYS ?? 30,
    resumableUploadExpiryMs: (raw.TUS_UPLOAD_EXPIRY ?? 86_400) * 1000,
    trashPurgeCron: raw.TRASH_PURGE_CRON ?? '*/10 * * * *',
    webhookAllowPrivateUrls: raw.WEBHOOK_ALLOW_PRIVATE_URLS === true,
    webhookDeliveryConcurrency: raw.WEBHOOK_DELIVERY_CONCURRENCY ?? 100,
    instanceHeartbeatMs: raw.INSTANCE_HEARTBEAT_MS ?? 10_000,
    secretsEncryptionKey: secret('SECRETS_ENCRYPTION_KEY'),
    developmentSecrets: kept && { file: kept.file, names: unsetSecrets, created: kept.created },
    admin: raw.ADMIN_USERNAME ? { username: raw.ADMIN_USERNAME, password: raw.ADMIN_PASSWORD ?? '' } : null,
    publicRateLimitPerMinute: raw.PUBLIC_RATE_LIMIT_PER_MINUTE ?? 120,
    rateLimitsEnabled: raw.RATE_LIMITS_ENABLED !== false,
    trustProxy: parseTrustProxy(raw.TRUST_PROXY),
    logLevel: raw.LOG_LEVEL ?? (nodeEnv === 'test' ? 'silent' : 'info'),
    clamav: {
      ...(raw.CLAMAV_SOCKET || !raw.CLAMAV_HOST ? { socket: raw.CLAMAV_SOCKET ?? DEBIAN_CLAMD_SOCKET } : { host: raw.CLAMAV_HOST, port: raw.CLAMAV_PORT ?? 3310 }),
      configured: Boolean(raw.CLAMAV_SOCKET || raw.CLAMAV_HOST),
      timeoutMs: raw.CLAMAV_TIMEOUT_MS ?? 120_000,
      // clamd's own default StreamMaxLength.
      maxStreamBytes: raw.CLAMAV_MAX_STREAM_BYTES ?? 25 * 1024 * 1024,
    },
    media: {
      ffmpegPath: raw.FFMPEG_PATH ?? 'ffmpeg',
      pdftoppmPath: raw.PDFTOPPM_PATH ?? 'pdftoppm',
      thumbnailConcurrency: raw.THUMBNAIL_CONCURRENCY ?? 2,
      scanConcurrency: raw.SCAN_CONCURRENCY ?? 4,
      maxInputPixels: raw.THUMBNAIL_MAX_INPUT_PIXELS ?? 100_000_000,
      maxDecodeMb: raw.THUMBNAIL_MAX_DECODE_MB ?? 256,
      toolTimeoutMs: raw.THUMBNAIL_TIMEOUT_MS ?? 30_000,
      toolMemoryMb: raw.THUMBNAIL_TOOL_MEMORY_MB ?? 2048,
      retryDelayMs: raw.MEDIA_RETRY_DELAY_MS ?? 5_000,
    },
    apiKeyCacheMs: (raw.API_KEY_CACHE_SECONDS ?? 30) * 1000,
    httpIdleTimeoutMs: (raw.HTTP_IDLE_TIMEOUT_SECONDS ?? 60) * 1000,
    httpHeadersTimeoutMs: (raw.HTTP_HEADERS_TIMEOUT_SECONDS ?? 60) * 1000,
    httpLingerMs: (raw.HTTP_LINGER_SECONDS ?? 10) * 1000,
  });
}
