import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount, type TestAccount } from '../../support/accounts.js';
import { startTestApp, type TestApp } from '../../support/test-app.js';
import { upload } from '../../support/uploads.js';

describe('smoke', () => {
  let t: TestApp;
  let owner: TestAccount;
  beforeAll(async () => {
    t = await startTestApp();
    owner = await createAccount(t.app);
  });
  afterAll(() => t.close());

  it('uploads', async () => {
    const res = await upload(t, owner.auth, 'hello', { filename: 'a.txt' });
    console.log(res.status, res.body);
    const list = await t.http().get('/v1/files').set(owner.auth);
    console.log(list.status, JSON.stringify(list.body));
    expect(res.status).toBe(200);
  });
});
