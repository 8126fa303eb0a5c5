import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { launchBrowser } from '../../support/browser.js';
import { seedFile } from '../../support/files.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';

describe('Swagger UI in a real browser', () => {
  let t: TestApp;
  let browser: Browser;
  let owner: TestAccount;

  beforeAll(async () => {
    t = await startTestApp();
    owner = await createAccount(t.app);
    browser = await launchBrowser();
  });
  afterAll(async () => {
    await browser?.close();
    await t.close();
  });

  it('loads, takes an API key through Authorize, and "Try it out" calls the API with it', async () => {
    const page = await authorizedPage();
    const operation = page.locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: /^\/v1\/user\/info$/ }) });
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.try-out__btn').click();
    await operation.locator('button.execute').click();
    const body = operation.locator('.live-responses-table .response-col_description pre').first();
    await body.waitFor();
    const text = await body.innerText();
    expect(text).toContain(owner.accountId);
    expect(text).toContain('"success": true');
    await page.close();
  });

  it('"Try it out" on a listing lists everything, and the next_cursor it answered, pasted into cursor, reads on', async () => {
    const file = await seedFile(t.app, owner, { name: 'shared twice.txt' });
    for (let i = 0; i < 2; i++) await t.http().post('/v1/shares').set(owner.auth).send({ file_id: file.id }).expect(201);
    const page = await authorizedPage();
    const operation = await tryOut(page, 'GET', '/v1/shares');
    await operation.locator('tr[data-param-name="per_page"] input').fill('1');
    const first = await execute(operation);
    expect(first.pagination).toMatchObject({ total_items: 2, page: 1 });
    expect(first.data).toHaveLength(1);
    await operation.locator('tr[data-param-name="cursor"] input').fill(first.pagination.next_cursor);
    const second = await execute(operation);
    expect(second.success).toBe(true);
    expect(second.data).toHaveLength(1);
    expect(second.data[0].id).not.toBe(first.data[0].id);
    await page.close();
  });

  it('"Try it out" uploads the chosen file, under the name typed in, into the root', async () => {
    const page = await authorizedPage();
    const operation = await tryOut(page, 'POST', '/v1/files/upload');
    await operation.locator('input[type=file]').setInputFiles({ name: 'hello.txt', mimeType: 'text/plain', buffer: Buffer.from('hello') });
    await operation.locator('tr[data-property-name="name"] input[type=text]').fill('from swagger.txt');
    const answer = await execute(operation);
    expect(answer.data).toMatchObject({ name: 'from swagger.txt', folder_id: null, size: 5 });
    await page.close();
  });

  it('"Try it out" creates a folder with the request body Swagger UI proposes', async () => {
    const page = await authorizedPage();
    const answer = await execute(await tryOut(page, 'POST', '/v1/folders'));
    expect(answer.success).toBe(true);
    expect(answer.data.parent_id).toBeNull();
    await page.close();
  });

  async function authorizedPage(): Promise<Page> {
    const page = await browser.newPage();
    await page.goto(`${t.baseUrl}/docs`);
    await page.locator('.opblock-summary-path', { hasText: '/v1/user/info' }).first().waitFor();
    await page.locator('button.authorize').first().click();
    await page.locator('.auth-container input').first().fill(owner.apiKey);
    await page.locator('.auth-btn-wrapper button.authorize').first().click();
    await page.locator('.auth-btn-wrapper button.btn-done').first().click();
    return page;
  }

  /** The operation opened with "Try it out" pressed, its form as Swagger UI fills it. */
  async function tryOut(page: Page, method: string, path: string): Promise<Locator> {
    const summary = page.locator('.opblock-summary', { has: page.locator('.opblock-summary-path', { hasText: new RegExp(`^${path}$`) }) }).filter({
      has: page.locator('.opblock-summary-method', { hasText: new RegExp(`^${method}$`) }),
    });
    const operation = page.locator('.opblock', { has: summary });
    await summary.click();
    await operation.locator('button.try-out__btn').click();
    return operation;
  }

  /** Presses Execute and answers the JSON body Swagger UI shows. */
  async function execute(operation: Locator): Promise<any> {
    const clear = operation.locator('button.btn-clear');
    if (await clear.count()) await clear.click();
    await operation.locator('button.execute').click();
    const body = operation.locator('.live-responses-table .response-col_description pre').first();
    await body.waitFor();
    return JSON.parse(await body.innerText());
  }
});
