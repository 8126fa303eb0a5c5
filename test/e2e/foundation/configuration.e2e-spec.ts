import { describe, expect, it } from 'vitest';
import { runNode } from '../../support/processes.js';
import { createTestEnvironment } from '../../support/test-app.js';

const SPACES = ' '.repeat(40);
const A_SECRET = 'k'.repeat(40);

/**
 * A variable set to only spaces counts as unset (README, Configuration), for every variable: a required one is then
 * missing. Each refusal goes through the real server and the command line, which read the same configuration.
 */
describe('configuration set to only spaces', () => {
  it.each([
    // A production secret of spaces passed the length check: every signed link would have been signed with it.
    ['URL_SIGNING_SECRET', { NODE_ENV: 'production', URL_SIGNING_SECRET: SPACES, SECRETS_ENCRYPTION_KEY: A_SECRET }, 'URL_SIGNING_SECRET must be set to at least 32 characters when NODE_ENV=production'],
    ['SECRETS_ENCRYPTION_KEY', { NODE_ENV: 'production', URL_SIGNING_SECRET: A_SECRET, SECRETS_ENCRYPTION_KEY: SPACES }, 'SECRETS_ENCRYPTION_KEY must be set to at least 32 characters when NODE_ENV=production'],
    ['ADMIN_PASSWORD', { ADMIN_USERNAME: 'operator', ADMIN_PASSWORD: ' '.repeat(12) }, 'ADMIN_PASSWORD must be at least 8 characters when ADMIN_USERNAME is set'],
    ['S3_BUCKET', { STORAGE_DRIVER: 's3', S3_BUCKET: ' ' }, 'S3_BUCKET must be set when STORAGE_DRIVER=s3'],
  ])('is refused as missing for %s, by the server and the command line alike', async (name, overrides, message) => {
    // PORT 0: were the value accepted, the server would start on a free port rather than on 3000.
    const environment = await createTestEnvironment({ PORT: '0', ...overrides });
    try {
      const server = await runNode('main.js', [], environment.env);
      expect(server.code).toBe(1);
      expect(server.stderr).toBe(`Invalid configuration:\n  - ${name}: ${message}\n`);
      const cli = await runNode('cli.js', ['db', 'migrate'], environment.env);
      expect(cli.code).toBe(1);
      expect(cli.stdout).toBe('');
      expect(JSON.parse(cli.stderr.trim().split('\n').pop()!).error).toEqual({ code: 'configuration_error', message: `Invalid configuration:\n  - ${name}: ${message}` });
    } finally {
      await environment.dispose();
    }
  });
});
