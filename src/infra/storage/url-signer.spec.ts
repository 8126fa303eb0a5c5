import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../config/app-config.js';
import { UrlSigner } from './url-signer.js';

const signer = (secret = 'a'.repeat(64)) => new UrlSigner(loadConfig({ URL_SIGNING_SECRET: secret, PUBLIC_BASE_URL: 'https://files.example.com' }));
const now = new Date('2026-11-21T10:00:00.000Z');
const parts = (url: string) => {
  const u = new URL(url);
  return { path: u.pathname, expires: u.searchParams.get('expires') ?? undefined, signature: u.searchParams.get('signature') ?? undefined };
};

describe('UrlSigner', () => {
  it('signs the path with an expiry one hour ahead, on PUBLIC_BASE_URL', () => {
    const url = signer().sign('/v1/files/file_1/download', now);
    expect(url).toMatch(/^https:\/\/files\.example\.com\/v1\/files\/file_1\/download\?expires=\d+&signature=[0-9a-f]{64}$/);
    expect(Number(parts(url).expires)).toBe(now.getTime() / 1000 + 3600);
  });

  it('signs exactly HMAC-SHA256(URL_SIGNING_SECRET, "<path>\\n<expires>") in lowercase hex (a known answer, computed with openssl)', () => {
    // printf '/v1/files/file_1/download\n1795258800' | openssl dgst -sha256 -hmac aaaa…(64 × a)
    const known = '122dab45ca8e35b71b35c0f071723ec16ea9d3dc71c17919239064cccace378d';
    expect(signer().sign('/v1/files/file_1/download', now)).toBe(`https://files.example.com/v1/files/file_1/download?expires=1795258800&signature=${known}`);
    expect(signer().verify('/v1/files/file_1/download', '1795258800', known, now)).toBe(true);
  });

  it('verifies its own links until they expire', () => {
    const { path, expires, signature } = parts(signer().sign('/v1/files/file_1/download', now));
    expect(signer().verify(path, expires, signature, now)).toBe(true);
    expect(signer().verify(path, expires, signature, new Date(now.getTime() + 3600_000))).toBe(true);
    expect(signer().verify(path, expires, signature, new Date(now.getTime() + 3601_000))).toBe(false);
  });

  it('refuses another path, a changed expiry, a changed or malformed signature, or another secret', () => {
    const { path, expires, signature } = parts(signer().sign('/v1/files/file_1/download', now));
    const flipped = signature!.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    expect(signer().verify('/v1/files/file_2/download', expires, signature, now)).toBe(false);
    expect(signer().verify('/v1/files/file_1/thumbnail', expires, signature, now)).toBe(false);
    expect(signer().verify(path, String(Number(expires) + 1), signature, now)).toBe(false);
    expect(signer().verify(path, expires, flipped, now)).toBe(false);
    expect(signer().verify(path, expires, signature!.toUpperCase(), now)).toBe(false);
    expect(signer().verify(path, expires, signature!.slice(2), now)).toBe(false);
    expect(signer().verify(path, undefined, signature, now)).toBe(false);
    expect(signer().verify(path, expires, undefined, now)).toBe(false);
    expect(signer().verify(path, '1e12', signature, now)).toBe(false);
    expect(signer('b'.repeat(64)).verify(path, expires, signature, now)).toBe(false);
  });

  it('gives each expiry its own signature when one signer is used again and again', () => {
    const one = signer();
    const path = '/v1/files/file_1/download';
    const times = [now, now, new Date(now.getTime() + 1000), now, new Date(now.getTime() + 500)];
    for (const [at, lifetime] of times.flatMap((at) => [[at, 3600], [at, 60]] as const)) {
      const url = one.sign(path, at, lifetime);
      const { expires, signature } = parts(url);
      expect(Number(expires)).toBe(Math.floor(at.getTime() / 1000) + lifetime);
      expect(url).toBe(signer().sign(path, at, lifetime));
      expect(signer().verify(path, expires, signature, at)).toBe(true);
    }
  });
});
