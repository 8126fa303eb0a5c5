import { describe, expect, it } from 'vitest';
import { ConfigurationError, loadConfig } from './app-config.js';

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
  ])('names %s when it is %s', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrowError(new RegExp(`^Invalid configuration:[\\s\\S]*${name}`));
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
    expect(() => loadConfig({ NODE_ENV: 'production', URL_SIGNING_SECRET: 'tooshort-secret' })).toThrowError(/URL_SIGNING_SECRET(?![\s\S]*tooshort)/);
  });

  it('requires SECRETS_ENCRYPTION_KEY in production and uses a fixed development key otherwise', () => {
    expect(() => loadConfig({ NODE_ENV: 'production', URL_SIGNING_SECRET: 'u'.repeat(32) })).toThrowError(/SECRETS_ENCRYPTION_KEY/);
    expect(() => loadConfig({ NODE_ENV: 'production', URL_SIGNING_SECRET: 'u'.repeat(32), SECRETS_ENCRYPTION_KEY: 'short' })).toThrowError(/SECRETS_ENCRYPTION_KEY/);
    expect(loadConfig({ NODE_ENV: 'production', URL_SIGNING_SECRET: 'u'.repeat(32), SECRETS_ENCRYPTION_KEY: 'k'.repeat(32) }).secretsEncryptionKey).toBe('k'.repeat(32));
    expect(loadConfig({}).secretsEncryptionKey).toBe(loadConfig({}).secretsEncryptionKey);
  });
});
