import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/app-config.js';
import { ListCursors, type CursorScope } from './list-cursor.js';
import { CursorPageRequest } from './pagination.request.js';

const cursors = (secret = 'a'.repeat(64)) => new ListCursors(loadConfig({ NODE_ENV: 'test', URL_SIGNING_SECRET: secret }));
const scope: CursorScope = { list: 'files', accountId: 'acc_1', query: { folder_id: undefined, sort: 'name_asc', type: undefined, search: 'rep' } };
const request = (fields: Partial<CursorPageRequest>) => Object.assign(new CursorPageRequest(), fields);

describe('list cursors', () => {
  it('carry a position and the items walked, and continue at any per_page', () => {
    const cursor = cursors().encode(['report (1).pdf', 'file_9'], 150, scope);
    expect(cursors().decode(cursor, scope)).toEqual({ after: ['report (1).pdf', 'file_9'], walked: 150 });
    expect(cursors().open(request({ cursor, per_page: 50 }), scope)).toMatchObject({ page: 4, offset: 0, limit: 51, after: ['report (1).pdf', 'file_9'] });
    expect(cursors().open(request({ cursor, per_page: 100 }), scope)).toMatchObject({ page: 2, limit: 101 });
    expect(cursors().decode(cursors().encode([4096, 'file_9'], 0, scope), scope).after).toEqual([4096, 'file_9']);
  });

  it('page numbers start where the number says', () => {
    expect(cursors().open(request({ page: 3, per_page: 20 }), scope)).toEqual({ perPage: 20, page: 3, offset: 40, after: null, limit: 21, walked: 40 });
    expect(cursors().open(request({}), scope)).toMatchObject({ page: 1, offset: 0, perPage: 50 });
  });

  it.each([
    ['another account', { ...scope, accountId: 'acc_2' }],
    ['another listing', { ...scope, list: 'trash' as const }],
    ['another sort', { ...scope, query: { ...scope.query, sort: 'name_desc' } }],
    ['another search', { ...scope, query: { ...scope.query, search: 'repo' } }],
    ['a filter added', { ...scope, query: { ...scope.query, type: 'image' } }],
  ])('refuse a cursor made for %s', (_, other) => {
    const cursor = cursors().encode(['a', 'file_1'], 10, scope);
    expect(() => cursors().decode(cursor, other)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });

  it('treat an empty search as no search', () => {
    const cursor = cursors().encode(['a', 'file_1'], 10, { ...scope, query: { ...scope.query, search: '' } });
    expect(cursors().decode(cursor, { ...scope, query: { ...scope.query, search: undefined } })).toMatchObject({ walked: 10 });
  });

  it('refuse an altered position, an altered MAC, or a cursor signed with another secret', () => {
    const cursor = cursors().encode(['a', 'file_1'], 10, scope);
    const [payload, mac] = cursor.split('.');
    const altered = Buffer.from(JSON.stringify([1, 'a', 'file_1', 0])).toString('base64url');
    for (const bad of [`${altered}.${mac}`, `${payload}.${'A'.repeat(22)}`, `${payload}.${mac.slice(0, 10)}`, payload]) {
      expect(() => cursors().decode(bad, scope), bad).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    }
    expect(() => cursors('b'.repeat(64)).decode(cursor, scope)).toThrow(expect.objectContaining({ code: 'invalid_request' }));
  });

  it('refuse a MAC written differently that decodes to the same bytes', () => {
    const cursor = cursors().encode(['a', 'file_1'], 10, scope);
    const [payload, mac] = cursor.split('.');
    // 16 bytes are 22 characters: the last one carries 2 bits, so its 4 low bits can change without changing the bytes.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(mac.at(-1)!);
    const sameBytes = `${mac.slice(0, -1)}${alphabet[last ^ 1]}`;
    expect(Buffer.from(sameBytes, 'base64url')).toEqual(Buffer.from(mac, 'base64url'));
    for (const bad of [`${payload}.${sameBytes}`, `${payload}.${mac}=`, `${payload}.${mac}.`]) {
      expect(() => cursors().decode(bad, scope), bad).toThrow(expect.objectContaining({ code: 'invalid_request' }));
    }
  });
});
