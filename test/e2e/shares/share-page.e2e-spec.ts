import { readFile } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { launchBrowser } from '../../support/browser.js';
import { seedFile } from '../../support/files.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { startOfFreshRateWindow } from '../../support/time.js';
import { uploadOk } from '../../support/uploads.js';
import { createShare, expireShare, outboxEvents } from './share-fixtures.js';

describe('the share page in a real browser', () => {
  let t: TestApp;
  let owner: TestAccount;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '100000' });
    owner = await createAccount(t.app);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t.close();
  });

  /** A fresh page that collects console errors (a CSP violation would show up there). */
  async function openPage(path: string): Promise<{ page: Page; status: number | undefined; errors: string[]; headers: Record<string, string> }> {
    const context = await browser.newContext({ acceptDownloads: true });
    const page = await context.newPage();
    const errors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') errors.push(message.text());
    });
    const response = await page.goto(`${t.baseUrl}${path}`);
    return { page, status: response?.status(), errors, headers: response?.headers() ?? {} };
  }

  it('shows the file name and size and downloads the file with one click', async () => {
    const content = Buffer.from('the quarterly numbers\n'.repeat(100));
    const file = await seedFile(t.app, owner, { name: 'Q3 <numbers> & "notes".txt', content });
    const share = await createShare(t, owner, { file_id: file.id });
    const { page, status, errors, headers } = await openPage(share.path);
    expect(status).toBe(200);
    expect(headers['content-type']).toMatch(/^text\/html/);
    expect(headers['content-security-policy']).toMatch(/default-src 'none'/);
    expect(headers['referrer-policy']).toBe('no-referrer');
    // The hostile name is shown as text, not interpreted as markup.
    expect(await page.locator('h1').textContent()).toBe('Q3 <numbers> & "notes".txt');
    expect(await page.locator('main').textContent()).toContain('2.1 KB');
    expect(await page.locator('input[type=password]').count()).toBe(0);

    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#download').click()]);
    // Chromium replaces characters it will not put in a file name; the name is still the file's.
    expect(download.suggestedFilename()).toMatch(/^Q3 .numbers. & .notes.\.txt$/);
    const bytes = await readFile((await download.path())!);
    expect(Buffer.compare(bytes, content)).toBe(0);
    expect(errors).toEqual([]);
    await page.context().close();

    // Opening the page counted a view, the click a download.
    const actions = (await outboxEvents(t.app, owner, 'share.accessed'))
      .filter((e) => (e.data.share as { id: string }).id === share.id)
      .map((e) => (e.data.access as { action: string; user_agent: string }));
    expect(actions.map((a) => a.action)).toEqual(['view', 'download']);
    expect(actions[0].user_agent).toMatch(/Chrome/);
  });

  it('asks for the password, shows an error for a wrong one and downloads with the right one', async () => {
    const content = Buffer.from([0, 1, 2, 3, 254, 255, 10, 13, 0]);
    const file = await seedFile(t.app, owner, { name: 'secret.bin', content, mimeType: 'application/octet-stream' });
    const share = await createShare(t, owner, { file_id: file.id, password: 'Tr0ub4dor&3 ünïcode' });
    const { page, status, errors } = await openPage(share.path);
    expect(status).toBe(200);
    // Nothing about the file is shown before the password is known.
    expect(await page.locator('main').textContent()).not.toContain('secret.bin');
    const password = page.locator('input[type=password][name=password]');
    expect(await password.count()).toBe(1);

    await password.fill('wrong password');
    const [wrongResponse] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.locator('#download').click()]);
    expect(wrongResponse.status()).toBe(401);
    await page.waitForLoadState();
    expect(await page.locator('#error').textContent()).toContain('not right');
    // The password went in the body, not the URL.
    expect(page.url()).not.toContain('password');
    expect(wrongResponse.url()).not.toContain('wrong');

    await page.locator('input[type=password]').fill('Tr0ub4dor&3 ünïcode');
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#download').click()]);
    expect(download.suggestedFilename()).toBe('secret.bin');
    const bytes = await readFile((await download.path())!);
    expect(Buffer.compare(bytes, content)).toBe(0);
    expect(errors.filter((e) => !/401/.test(e))).toEqual([]);
    await page.context().close();
  });

  it('shows an uploaded file behind its password and downloads it with one click', async () => {
    const content = Buffer.from('uploaded through the API\n'.repeat(50));
    const uploaded = await uploadOk(t, owner.auth, content, { name: 'uploaded report.txt' });
    const share = await createShare(t, owner, { file_id: uploaded.id, password: 'open sesame' });
    const { page, status, errors } = await openPage(share.path);
    expect(status).toBe(200);
    expect(await page.locator('main').textContent()).not.toContain('uploaded report.txt');
    await page.locator('input[type=password][name=password]').fill('open sesame');
    const [download] = await Promise.all([page.waitForEvent('download'), page.locator('#download').click()]);
    expect(download.suggestedFilename()).toBe('uploaded report.txt');
    expect(Buffer.compare(await readFile((await download.path())!), content)).toBe(0);
    expect(errors).toEqual([]);
    await page.context().close();
  });

  it('tells the visitor when a link is unknown or expired', async () => {
    const unknown = await openPage(`/s/${'x'.repeat(43)}`);
    expect(unknown.status).toBe(404);
    expect(await unknown.page.locator('h1').textContent()).toBe('Link not found');
    await unknown.page.context().close();

    const share = await createShare(t, owner, { file_id: (await seedFile(t.app, owner)).id, expires_in: 60 });
    await expireShare(t.app, share.id);
    const expired = await openPage(share.path);
    expect(expired.status).toBe(410);
    expect(await expired.page.locator('h1').textContent()).toBe('Link expired');
    await expired.page.context().close();
  });
});

describe('the share page when the visitor\'s address is over the public rate limit', () => {
  let t: TestApp;
  let owner: TestAccount;
  let browser: Browser;

  beforeAll(async () => {
    t = await startTestApp({ PUBLIC_RATE_LIMIT_PER_MINUTE: '3' });
    owner = await createAccount(t.app);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t.close();
  });

  it('shows a browser a page saying when to come back, and still answers a program with the JSON envelope', async () => {
    const share = await createShare(t, owner, { file_id: (await seedFile(t.app, owner, { name: 'popular.txt' })).id });
    // The limit is per wall-clock minute: all of this in one.
    await startOfFreshRateWindow();
    const page = await (await browser.newContext()).newPage();
    for (let visit = 1; visit <= 3; visit++) expect((await page.goto(`${t.baseUrl}${share.path}`))?.status()).toBe(200);

    const refused = await page.goto(`${t.baseUrl}${share.path}`);
    expect(refused?.status()).toBe(429);
    const headers = refused!.headers();
    expect(headers['content-type']).toBe('text/html; charset=utf-8');
    expect(Number(headers['retry-after'])).toBeGreaterThan(0);
    expect(headers['cache-control']).toBe('no-store');
    expect(await page.locator('h1').textContent()).toBe('Too many attempts');
    expect(await page.locator('main').textContent()).toContain('Too many requests came from your network. You can try again in');
    // Its download link, followed by hand, too.
    expect((await page.goto(`${t.baseUrl}${share.path}/download`))?.status()).toBe(429);
    expect(await page.locator('h1').textContent()).toBe('Too many attempts');
    await page.context().close();

    const program = await fetch(`${t.baseUrl}${share.path}`, { headers: { Accept: 'application/json' } });
    expect(program.status).toBe(429);
    expect(await program.json()).toMatchObject({ success: false, error: { code: 'rate_limit_exceeded' } });
  });
});
