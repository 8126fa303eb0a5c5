import { DataSource } from 'typeorm';
import { describe, expect, it } from 'vitest';
import { AccountEntity } from '../../../src/modules/accounts/account.entity.js';
import type { TestAccount } from '../../support/accounts.js';
import { useTestApp } from '../../support/app-fixture.js';
import type { TestApp } from '../../support/test-app.js';
import { uploadOk } from '../../support/uploads.js';

describe('a file change whose input is sent where the route does not read it', () => {
  let t: TestApp;
  let owner: TestAccount;
  useTestApp((started) => ({ t, owner } = started));

  const storageUsed = async () => (await t.app.get(DataSource).getRepository(AccountEntity).findOneByOrFail({ id: owner.accountId })).storageUsed;

  it('refuses DELETE /files/{id} with a body (permanent goes in the query) with 400, and neither trashes nor deletes the file', async () => {
    const file = await uploadOk(t, owner.auth, 'keep me', { name: 'body-delete.txt' });
    const used = await storageUsed();
    for (const body of [{ permanent: true }, { permanent: 'true' }, ['x']]) {
      const res = await t.http().delete(`/v1/files/${file.id}`).set(owner.auth).send(body);
      expect(res.status).toBe(400);
      expect(res.body.error.code).toBe('invalid_request');
      expect(res.body.error.details.fields[0].message).toBe('is not allowed');
    }
    expect((await t.http().get(`/v1/files/${file.id}`).set(owner.auth)).status).toBe(200);
    expect(await storageUsed()).toBe(used);
    // `{}` is no body, and the query is where permanent goes.
    expect((await t.http().delete(`/v1/files/${file.id}?permanent=true`).set(owner.auth).send({})).body.data.recoverable_until).toBeNull();
    expect(await storageUsed()).toBe(used - 7);
  });

  it('refuses PATCH /files/{id} with the name or folder in the query with 400, rather than answering 200 having changed nothing', async () => {
    const file = await uploadOk(t, owner.auth, 'x', { name: 'query-patch.txt' });
    const res = await t.http().patch(`/v1/files/${file.id}?name=renamed.txt`).set(owner.auth).send({});
    expect(res.status).toBe(400);
    expect(res.body.error.details.fields).toEqual([{ field: 'name', message: 'is not allowed' }]);
    expect((await t.http().get(`/v1/files/${file.id}`).set(owner.auth)).body.data.name).toBe('query-patch.txt');
    expect((await t.http().patch(`/v1/files/${file.id}`).set(owner.auth).send({ name: 'renamed.txt' })).body.data.name).toBe('renamed.txt');
  });
});
