import * as fs from 'node:fs';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../../test/support/accounts.js';
import { startTestApp, type TestApp } from '../../../test/support/test-app.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../../test/support/webhook-receiver.js';
import * as library from '../src/index.js';

/**
 * Runs every JavaScript example of clients/js/README.md, in order, against a live server: each block on its own,
 * after a fresh prelude that provides what the README says the reader already has (`folder`, `file`, `other`,
 * `bytes`). Only the origins are swapped for the test server's and receiver's; the Express receiver snippet is
 * left out (it needs an Express app; the signature it checks is tested in client.e2e-spec.ts).
 */
const README = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const blocks = [...README.matchAll(/```js\n([\s\S]*?)```/g)].map((match) => match[1]).filter((code) => !code.includes('app.post('));
const AsyncFunction = Object.getPrototypeOf(async () => undefined).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<void>;

describe("the JavaScript client's README examples", () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  let apiKey: string;
  const dir = mkdtempSync(join(tmpdir(), 'fss-js-readme-'));
  const cwd = process.cwd();

  beforeAll(async () => {
    t = await startTestApp();
    receiver = await startWebhookReceiver();
    apiKey = (await createAccount(t.app)).apiKey;
    for (const name of ['report.pdf', 'report.bin', 'video.mp4']) writeFileSync(join(dir, name), `the bytes of ${name}\n`);
    process.chdir(dir);
  });
  afterAll(async () => {
    process.chdir(cwd);
    await receiver?.close();
    await t?.close();
  });

  it('finds the examples', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(8);
  });

  it('runs every example as written', async () => {
    const prelude = `
      const { FileStorage, NotFoundError, RateLimitError, StorageExceededError, verifyWebhookSignature } = library;
      const client = new FileStorage({ apiKey: process.env.FILE_STORAGE_API_KEY, baseUrl: 'https://files.example.com' });
      const folder = await client.folders.create({ name: 'Docs' });
      const file = await client.files.upload(Buffer.from('readme'), { name: 'readme.txt' });
      const other = await client.files.upload(Buffer.from('other'), { name: 'other.txt' });
      const bytes = new Uint8Array([1, 2, 3]);
    `;
    process.env.FILE_STORAGE_API_KEY = apiKey;
    for (const [i, code] of blocks.entries()) {
      const body = `${prelude}\n{\n${code.replace(/^import .* from '@file-storage\/client';$/gm, '')}\n}`
        .replaceAll('https://files.example.com', t.baseUrl)
        .replaceAll('https://example.com/hooks', `${receiver.url}/hooks`);
      await new AsyncFunction('library', 'fs', 'process', body)(library, fs, process).catch((error: Error) => {
        throw new Error(`README example ${i + 1} failed: ${error.message}\n${code}`);
      });
    }
    expect(readFileSync(join(dir, 'copy.bin'), 'utf8')).toBe('readme');
  }, 120_000);
});
