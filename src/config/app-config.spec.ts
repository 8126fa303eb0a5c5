import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { parseEnv } from 'node:util';
import { describe, expect, it } from 'vitest';
import { getMetadataStorage } from 'class-validator';
import { ConfigurationError, EnvironmentVariables, loadConfig, onChosenPort } from './app-config.js';

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      port: 3000,
      publicBaseUrl: 'http://localhost:3000',
      database: { kind: 'sqlite', path: './data/storage.sqlite' },
      redisUrl: 'redis://127.0.0.1:6379',
      storage: { driver: 'local', dir: './data/blobs' },
      trashRetentionDays: 30,
      trashPurgeCron: '*/10 * * * *',
      webhookAllowPrivateUrls: false,
      admin: null,
    });
    expect(config.urlSigningSecret).toHaveLength(64);
  });

  it('reads PostgreSQL URLs and decimal retention days', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://u:p@db:5432/storage', TRASH_RETENTION_DAYS: '0.0001' });
    expect(config.database).toEqual({ kind: 'postgres', url: 'postgres://u:p@db:5432/storage' });
    expect(config.trashRetentionDays).toBe(0.0001);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['DATABASE_URL', 'mysql://x'],
    ['REDIS_URL', 'localhost:6379'],
    ['STORAGE_DRIVER', 'ftp'],
    ['TRASH_RETENTION_DAYS', '0'],
    ['TRASH_PURGE_CRON', 'soon'],
    ['WEBHOOK_ALLOW_PRIVATE_URLS', 'maybe'],
    ['PUBLIC_BASE_URL', 'localhost'],
    ['DATABASE_URL', 'postgres://user:db-secret@127.0.0.1:99999/storage'],
    ['DATABASE_URL', 'postgres://user:db-secret@[127.0.0.1/storage'],
    ['REDIS_URL', 'redis://127.0.0.1:99999'],
    ['PUBLIC_BASE_URL', 'http://[::1'],
    ['PUBLIC_BASE_URL', 'https://files.example.com/?from=proxy'],
    ['S3_ENDPOINT', 'minio:9000'],
    ['TRASH_RETENTION_DAYS', '-1'],
    ['TRASH_PURGE_CRON', '61 * * * *'],
    ['TRASH_PURGE_CRON', 'every ten minutes please'],
    ['PORT', '0x50'],
    ['API_KEY_CACHE_SECONDS', '0b11'],
    ['TRASH_RETENTION_DAYS', 'Infinity'],
    ['CLAMAV_MAX_STREAM_BYTES', '1e300'],
    ['RATE_LIMITS_ENABLED', 'False'],
    ['S3_FORCE_PATH_STYLE', 'yes'],
    ['TRUST_PROXY', 'abc'],
    ['TRUST_PROXY', '1.2.3'],
    ['TRUST_PROXY', '10.0.0.0/99'],
    ['TRUST_PROXY', '10.0.0.1,'],
    ['TRUST_PROXY', ':::::'],
  ])('names %s when it is %s, without echoing a password in it', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrowError(new RegExp(`^Invalid configuration:[\\s\\S]*${name}`));
    expect(() => loadConfig({ [name]: value })).not.toThrowError(/db-secret/);
  });

  it('shows the value as written when it is not a number', () => {
    expect(() => loadConfig({ PORT: '0x50' })).toThrowError('PORT: PORT must be an integer number (got "0x50")');
    expect(() => loadConfig({ TRASH_RETENTION_DAYS: 'thirty' })).toThrowError(/TRASH_RETENTION_DAYS: .*\(got "thirty"\)/);
  });

  it('takes an empty or blank variable as unset, so its documented default applies rather than 0 or "  "', () => {
    const blank = { PORT: '  ', API_KEY_CACHE_SECONDS: ' ', HTTP_IDLE_TIMEOUT_SECONDS: '\t', STORAGE_DIR: '  ', TRUST_PROXY: ' ', S3_REGION: ' ', RATE_LIMITS_ENABLED: ' ', ADMIN_USERNAME: ' ' };
    expect(loadConfig(blank)).toMatchObject({
      port: 3000,
      apiKeyCacheMs: 30_000,
      httpIdleTimeoutMs: 60_000,
      storage: { dir: './data/blobs', s3: { region: 'us-east-1' } },
      trustProxy: false,
      rateLimitsEnabled: true,
      admin: null,
    });
  });

  it('takes a secret of only spaces as unset: missing in production, generated elsewhere', () => {
    const spaces = ' '.repeat(40);
    expect(() => loadConfig({ NODE_ENV: 'production', URL_SIGNING_SECRET: spaces, SECRETS_ENCRYPTION_KEY: 'k'.repeat(32) })).toThrowError(
      'URL_SIGNING_SECRET: URL_SIGNING_SECRET must be set to at least 32 characters when NODE_ENV=production',
    );
    expect(loadConfig({ NODE_ENV: 'development', URL_SIGNING_SECRET: spaces }).urlSigningSecret).toMatch(/^[0-9a-f]{64}$/);
    expect(() => loadConfig({ ADMIN_USERNAME: 'operator', ADMIN_PASSWORD: spaces })).toThrowError(/ADMIN_PASSWORD: ADMIN_PASSWORD must be at least 8 characters/);
  });

  it('passes TRUST_PROXY on as Express reads it', () => {
    expect(loadConfig({ TRUST_PROXY: ' true ' }).trustProxy).toBe(true);
    expect(loadConfig({ TRUST_PROXY: '2' }).trustProxy).toBe(2);
    expect(loadConfig({ TRUST_PROXY: ' loopback, 10.0.0.0/8 ,fd00::/8, 192.168.0.0/255.255.0.0' }).trustProxy).toBe('loopback,10.0.0.0/8,fd00::/8,192.168.0.0/255.255.0.0');
  });

  it('reads 1 and 0 as true and false in every switch', () => {
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE_URLS: '1', S3_FORCE_PATH_STYLE: '1', RATE_LIMITS_ENABLED: '0' })).toMatchObject({
      webhookAllowPrivateUrls: true,
      storage: { s3: { forcePathStyle: true } },
      rateLimitsEnabled: false,
    });
    expect(loadConfig({ WEBHOOK_ALLOW_PRIVATE_URLS: 'false', S3_FORCE_PATH_STYLE: '0', RATE_LIMITS_ENABLED: 'true' })).toMatchObject({
      webhookAllowPrivateUrls: false,
      storage: { s3: { forcePathStyle: false } },
      rateLimitsEnabled: true,
    });
  });

  it('requires URL_SIGNING_SECRET in production and S3_BUCKET for the s3 driver', () => {
    const error = (() => {
      try {
        loadConfig({ NODE_ENV: 'production', STORAGE_DRIVER: 's3' });
      } catch (e) {
        return e as ConfigurationError;
      }
      throw new Error('expected a ConfigurationError');
    })();
    expect(error.problems.join('\n')).toMatch(/URL_SIGNING_SECRET/);
    expect(error.problems.join('\n')).toMatch(/S3_BUCKET/);
  });

  it('never echoes a secret value in its message', () => {
    const load = () => loadConfig({ NODE_ENV: 'production', URL_SIGNING_SECRET: 'tooshort-secret' });
    expect(load).toThrowError(/URL_SIGNING_SECRET/);
    expect(load).not.toThrowError(/tooshort/);
  });

  it('requires SECRETS_ENCRYPTION_KEY in production and has no public key for anyone else', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', URL_SIGNING_SECRET: 'u'.repeat(32) })).toThrowError(/SECRETS_ENCRYPTION_KEY/);
    expect(() => loadConfig({ NODE_ENV: 'production', URL_SIGNING_SECRET: 'u'.repeat(32), SECRETS_ENCRYPTION_KEY: 'short' })).toThrowError(/SECRETS_ENCRYPTION_KEY/);
    expect(loadConfig({ NODE_ENV: 'production', URL_SIGNING_SECRET: 'u'.repeat(32), SECRETS_ENCRYPTION_KEY: 'k'.repeat(32) }).secretsEncryptionKey).toBe('k'.repeat(32));
    // An explicit environment touches no file: unset secrets are this process's own (the server keeps them, see first-hour.e2e-spec).
    expect(loadConfig({}).secretsEncryptionKey).not.toBe(loadConfig({}).secretsEncryptionKey);
    expect(loadConfig({}).developmentSecrets).toBeNull();
  });

  it('derives the default PUBLIC_BASE_URL from PORT', () => {
    expect(loadConfig({ PORT: '8080' }).publicBaseUrl).toBe('http://localhost:8080');
    expect(loadConfig({ PORT: '8080', PUBLIC_BASE_URL: '' }).publicBaseUrl).toBe('http://localhost:8080');
    expect(loadConfig({ PORT: '8080', PUBLIC_BASE_URL: 'https://files.example.com/' }).publicBaseUrl).toBe('https://files.example.com');
  });

  it('lets the default PUBLIC_BASE_URL follow the port the system chose for PORT=0, and keeps one that is set', () => {
    expect(onChosenPort(loadConfig({ PORT: '0' }), 41234)).toMatchObject({ port: 41234, publicBaseUrl: 'http://localhost:41234' });
    expect(onChosenPort(loadConfig({ PORT: '0', PUBLIC_BASE_URL: 'https://files.example.com' }), 41234)).toMatchObject({ port: 41234, publicBaseUrl: 'https://files.example.com' });
  });

  it.each([
    ['URL_SIGNING_SECRET', 'change-me-to-a-long-random-string-of-at-least-32-chars'],
    ['SECRETS_ENCRYPTION_KEY', 'change-me-to-another-long-random-string-32-chars'],
    ['SECRETS_ENCRYPTION_KEY', 'replace_me_with_a_long_random_value_of_32_characters'],
    ['ADMIN_PASSWORD', 'change-me-please'],
  ])('refuses the placeholder %s "%s" in production, without echoing it', (name, value) => {
    const production = { NODE_ENV: 'production', URL_SIGNING_SECRET: 'u'.repeat(32), SECRETS_ENCRYPTION_KEY: 'k'.repeat(32), ADMIN_USERNAME: 'admin', ADMIN_PASSWORD: 'a-real-password', [name]: value };
    expect(() => loadConfig(production)).toThrowError(new RegExp(`${name}: ${name} is a placeholder`));
    expect(() => loadConfig(production)).not.toThrowError(value);
    expect(() => loadConfig({ ...production, NODE_ENV: 'development' })).not.toThrow();
  });

  it('accepts .env.example as it is, read by Node as the server reads .env, and sourced by a shell alike', () => {
    const text = readFileSync('.env.example', 'utf8');
    const parsed = parseEnv(text);
    const config = loadConfig(parsed);
    expect(config).toMatchObject({ port: 3000, publicBaseUrl: 'http://localhost:3000', trashPurgeCron: '*/10 * * * *' });
    const names = Object.keys(parsed);
    const script = `set -a; . ./.env.example; node -e 'process.stdout.write(JSON.stringify(Object.fromEntries(process.argv.slice(1).map((n) => [n, process.env[n]]))))' ${names.join(' ')}`;
    const sourced = JSON.parse(execFileSync('sh', ['-c', script], { env: { PATH: process.env.PATH ?? '' }, encoding: 'utf8' })) as Record<string, string>;
    expect(sourced).toEqual(parsed);
  });

  it('lists every variable it reads in .env.example and in the README', () => {
    const variables = [...new Set(getMetadataStorage().getTargetValidationMetadatas(EnvironmentVariables, '', true, false).map((m) => m.propertyName))];
    expect(variables.length).toBeGreaterThan(40);
    const example = Object.keys(parseEnv(readFileSync('.env.example', 'utf8')));
    const readme = readFileSync('README.md', 'utf8');
    expect(variables.filter((name) => !example.includes(name))).toEqual([]);
    expect(variables.filter((name) => !readme.includes(`\`${name}\``))).toEqual([]);
  });
});
