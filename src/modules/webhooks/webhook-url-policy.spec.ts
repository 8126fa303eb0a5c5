import { describe, expect, it } from 'vitest';
import { checkWebhookUrl, isPublicAddress } from './webhook-url-policy.js';

const strict = (resolved: Record<string, string[]> = {}) => ({
  allowPrivate: false,
  resolve: async (host: string) => {
    if (!(host in resolved)) throw new Error('ENOTFOUND');
    return resolved[host];
  },
});

describe('webhook url policy', () => {
  it.each([
    '127.0.0.1', '127.8.8.8', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.100.100.200',
    '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fd00:ec2::254', 'fc00::1', '::ffff:127.0.0.1',
    '::ffff:7f00:1', '::ffff:169.254.169.254', '64:ff9b::a00:1', '2002:7f00:1::1', 'ff02::1',
  ])('refuses %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    // IPv4-compatible (deprecated ::/96), in both notations, whatever the IPv4 address
    '::127.0.0.1', '::7f00:1', '::8.8.8.8', '::808:808', '0:0:0:0:0:0:127.0.0.1',
    // IPv4-mapped and IPv4-translated, in every notation
    '::ffff:10.0.0.1', '0:0:0:0:0:ffff:7f00:1', '::FFFF:127.0.0.1', '::ffff:0:127.0.0.1', '::ffff:0:808:808',
    // NAT64: the well-known prefix carries the IPv4 address; local-use NAT64 is never public
    '64:ff9b::127.0.0.1', '64:ff9b::7f00:1', '64:ff9b::a9fe:a9fe', '64:ff9b:1::7f00:1', '64:ff9b:1::808:808', '64:ff9b:1:2:3:4:808:808',
    // 6to4 with a private IPv4 address inside
    '2002:a00:1::', '2002:c0a8:101::1', '2002:a9fe:a9fe::1',
    // Teredo, whatever it carries
    '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    // zone ids and the rest
    'fe80::1%eth0', '::1%1', '::', '0::0', 'not an address', '',
  ])('refuses the IPv6 form %s', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each(['93.184.216.34', '8.8.8.8', '172.32.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '::ffff:808:808', '64:ff9b::8.8.8.8', '64:ff9b::808:808', '2002:808:808::1'])('accepts %s', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('wants https with a public host when private urls are not allowed', async () => {
    expect(await checkWebhookUrl('http://93.184.216.34/hook', strict())).toBe(
      'must be an https URL; WEBHOOK_ALLOW_PRIVATE_URLS=true allows http:// and local addresses for local development',
    );
    expect(await checkWebhookUrl('ftp://example.com/hook', strict())).toBe('must be an https URL');
    expect(await checkWebhookUrl('not-a-url', strict())).toBe('must be an absolute URL');
    expect(await checkWebhookUrl('https://user:pw@93.184.216.34/', strict())).toBe('must not contain credentials');
    expect(await checkWebhookUrl('https://93.184.216.34/hook', strict())).toBeNull();
    expect(await checkWebhookUrl('https://127.0.0.1/hook', strict())).toMatch(/private, loopback/);
    expect(await checkWebhookUrl('https://[::1]:8443/hook', strict())).toMatch(/private, loopback/);
    expect(await checkWebhookUrl('https://[::ffff:10.0.0.1]/hook', strict())).toMatch(/private, loopback/);
    expect(await checkWebhookUrl('https://169.254.169.254/latest/meta-data', strict())).toMatch(/metadata/);
    for (const host of ['[::127.0.0.1]', '[::ffff:7f00:1]', '[64:ff9b::7f00:1]', '[64:ff9b:1::7f00:1]', '[2002:7f00:1::1]', '[2001:0:4136:e378:8000:63bf:3fff:fdd2]']) {
      expect(await checkWebhookUrl(`https://${host}/hook`, strict())).toMatch(/private, loopback/);
    }
  });

  it('resolves host names and refuses one that resolves to any private address', async () => {
    const dns = { 'hooks.example.com': ['93.184.216.34'], 'rebind.example.com': ['93.184.216.34', '10.0.0.5'], 'internal.example.com': ['192.168.0.10'] };
    expect(await checkWebhookUrl('https://hooks.example.com/x', strict(dns))).toBeNull();
    expect(await checkWebhookUrl('https://rebind.example.com/x', strict(dns))).toMatch(/must not resolve/);
    expect(await checkWebhookUrl('https://internal.example.com/x', strict(dns))).toMatch(/must not resolve/);
    const nat64 = { 'nat64.example.com': ['64:ff9b::a00:5'], 'compat.example.com': ['::10.0.0.5'] };
    expect(await checkWebhookUrl('https://nat64.example.com/x', strict(nat64))).toMatch(/must not resolve/);
    expect(await checkWebhookUrl('https://compat.example.com/x', strict(nat64))).toMatch(/must not resolve/);
    expect(await checkWebhookUrl('https://nowhere.example.com/x', strict(dns))).toMatch(/could not be resolved/);
  });

  it('names WEBHOOK_ALLOW_PRIVATE_URLS when refusing what it would allow (a local receiver), and only then', async () => {
    const hint = /WEBHOOK_ALLOW_PRIVATE_URLS=true allows http:\/\/ and local addresses for local development/;
    expect(await checkWebhookUrl('http://127.0.0.1:4000/hook', strict())).toMatch(hint);
    expect(await checkWebhookUrl('https://127.0.0.1:4000/hook', strict())).toMatch(hint);
    expect(await checkWebhookUrl('https://receiver.test/hook', strict({ 'receiver.test': ['::1'] }))).toMatch(hint);
    expect(await checkWebhookUrl('ftp://127.0.0.1/hook', strict())).not.toMatch(hint);
    expect(await checkWebhookUrl('https://nowhere.example.com/x', strict({}))).not.toMatch(hint);
  });

  it('refuses localhost through the system resolver', async () => {
    expect(await checkWebhookUrl('https://localhost/hook', { allowPrivate: false })).toMatch(/must not resolve|could not be resolved/);
  });

  it('accepts http and private addresses when WEBHOOK_ALLOW_PRIVATE_URLS is on', async () => {
    expect(await checkWebhookUrl('http://127.0.0.1:9999/hook', { allowPrivate: true })).toBeNull();
    expect(await checkWebhookUrl('ftp://127.0.0.1/hook', { allowPrivate: true })).toBe('must be an http or https URL');
  });

  it.each([
    [' https://93.184.216.34/hook'],
    ['https://93.184.216.34/hook '],
    ['https://93.184.216.34/hook\n'],
    ['\thttps://93.184.216.34/hook'],
    ['https://93.184.216.34/ho\tok'],
    ['https://93.184.216.34/my hook'],
    ['https://93.184.216.34/hook\u0000'],
    ['https://93.184.216.34/hook\u007f'],
  ])('refuses %j, which the URL parser would change, whatever WEBHOOK_ALLOW_PRIVATE_URLS says', async (url) => {
    for (const options of [strict(), { allowPrivate: true }]) expect(await checkWebhookUrl(url, options)).toMatch(/^must not contain spaces or control characters/);
  });
});
