import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { launchBrowser } from '../../support/browser.js';
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
    const page = await browser.newPage();
    await page.goto(`${t.baseUrl}/docs`);
    await page.locator('.opblock-summary-path', { hasText: '/v1/user/info' }).first().waitFor();

    await page.locator('button.authorize').first().click();
    await page.locator('.auth-container input').first().fill(owner.apiKey);
    await page.locator('.auth-btn-wrapper button.authorize').first().click();
    await page.locator('.auth-btn-wrapper button.btn-done').first().click();

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
});
