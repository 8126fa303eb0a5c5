import { lookup as dnsLookup, type LookupOptions } from 'node:dns';
import { lookup } from 'node:dns/promises';
import { BlockList, isIP, type LookupFunction } from 'node:net';
import { ipv4Of, ipv6Words } from '../../common/net/ip-address.js';

/**
 * Where webhook deliveries may go. Only public unicast addresses are allowed, so a webhook cannot be
 * pointed at the service's own network (loopback, private ranges, link-local, cloud metadata endpoints).
 */
const BLOCKED = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8],
  ['100.64.0.0', 10], // carrier-grade NAT (also Alibaba's metadata address 100.100.100.200)
  ['127.0.0.0', 8],
  ['169.254.0.0', 16], // link-local, including 169.254.169.254 metadata
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved and broadcast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local, including fd00:ec2::254 metadata
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

/**
 * The one address policy of webhooks, applied when a webhook is created and again on the address a
 * delivery connects to. IPv6 forms that carry an IPv4 address are judged by that address (mapped,
 * NAT64 well-known prefix, 6to4); forms whose target cannot be judged or is never a public host
 * (IPv4-compatible, IPv4-translated and the rest of ::/64, local-use NAT64, Teredo) are refused outright.
 */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address.split('%')[0]);
  if (family === 4) return !BLOCKED.check(address, 'ipv4');
  if (family !== 6) return false;
  const w = ipv6Words(address);
  if (w.length !== 8 || w.some((word) => !(word >= 0 && word <= 0xffff))) return false;
  const zeros = (from: number, to: number) => w.slice(from, to).every((word) => word === 0);
  if (zeros(0, 5) && w[5] === 0xffff) return isPublicAddress(ipv4Of(w[6], w[7])); // ::ffff:0:0/96, IPv4-mapped
  if (zeros(0, 4)) return false; // the rest of ::/64: unspecified, loopback, IPv4-compatible (deprecated), IPv4-translated
  if (w[0] === 0x64 && w[1] === 0xff9b && zeros(2, 6)) return isPublicAddress(ipv4Of(w[6], w[7])); // NAT64 64:ff9b::/96
  if (w[0] === 0x64 && w[1] === 0xff9b) return false; // local-use NAT64 64:ff9b:1::/48 and the rest of 64:ff9b::/32
  if (w[0] === 0x2002) return isPublicAddress(ipv4Of(w[1], w[2])); // 6to4 2002::/16
  if (w[0] === 0x2001 && w[1] === 0) return false; // Teredo 2001::/32: the real target is hidden in the tunnel
  return !BLOCKED.check(address.split('%')[0], 'ipv6');
}

/** Why a delivery may not connect to `address`, as an error, or null when it may. */
export function refusedConnection(host: string, address: string): NodeJS.ErrnoException | null {
  if (isPublicAddress(address)) return null;
  return Object.assign(new Error(`connecting to ${host} (${address}) is not allowed: not a public address`), { code: 'EADDRNOTPUBLIC' });
}

/** Every refusal that WEBHOOK_ALLOW_PRIVATE_URLS lifts says so, for whoever tries a local receiver. */
const LOCAL_RECEIVERS_HINT = '; WEBHOOK_ALLOW_PRIVATE_URLS=true allows http:// and local addresses for local development';

/**
 * A `lookup` for http(s) agents that resolves as usual and then applies the address policy to every
 * address, so a DNS answer that changed since the webhook was created is caught before connecting.
 */
export const publicOnlyLookup = ((hostname: string, options: LookupOptions, callback: (...args: unknown[]) => void) => {
  dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
    if (error) return callback(error);
    const refused = addresses.map((a) => refusedConnection(hostname, a.address)).find((e) => e !== null);
    if (refused) return callback(refused);
    if (addresses.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }));
    if (options.all) return callback(null, addresses);
    callback(null, addresses[0].address, addresses[0].family);
  });
}) as unknown as LookupFunction;

export type Resolver = (hostname: string) => Promise<string[]>;

const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/** ASCII controls and the space: none belongs in a URL as written (RFC 3986), and the URL parser drops or encodes each. */
const UNPARSED_CHARACTERS = /[\u0000-\u0020\u007f]/;

/**
 * Checks a webhook url. Answers a problem in words, or null when the url is acceptable. With
 * `allowPrivate` (tests and local development) http and any address are accepted.
 */
export async function checkWebhookUrl(raw: string, options: { allowPrivate: boolean; resolve?: Resolver }): Promise<string | null> {
  // The URL parser would drop spaces and controls around the url and tabs and newlines inside it, so the url stored
  // and shown would not be the one delivered to. Like every other structured value (ids, event names, timestamps),
  // it is taken exactly as sent or refused, never quietly corrected.
  if (UNPARSED_CHARACTERS.test(raw)) return 'must not contain spaces or control characters: remove them around the URL, percent-encode them inside';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'must be an absolute URL';
  }
  const allowed = options.allowPrivate ? ['https:', 'http:'] : ['https:'];
  if (!allowed.includes(url.protocol)) {
    if (options.allowPrivate) return 'must be an http or https URL';
    return url.protocol === 'http:' ? `must be an https URL${LOCAL_RECEIVERS_HINT}` : 'must be an https URL';
  }
  // The parser also repairs what is not an absolute URL as written (`https:host`, `https:///host`, backslashes for
  // slashes): stored as sent, such a url would show one receiver and deliver to another.
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/\\]/i.test(raw) || raw.split(/[?#]/)[0].includes('\\')) {
    return `must be an absolute URL written as https://host/path; this one would be read as ${url.href}`;
  }
  // Nothing listens on port 0: every delivery would fail to connect.
  if (url.port === '0') return 'must not use port 0';
  if (url.username || url.password) return 'must not contain credentials';
  if (options.allowPrivate) return null;
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (isIP(host)) return isPublicAddress(host) ? null : `must not point to a private, loopback, link-local or metadata address${LOCAL_RECEIVERS_HINT}`;
  let addresses: string[];
  try {
    addresses = await (options.resolve ?? systemResolver)(host);
  } catch {
    return `host "${host}" could not be resolved`;
  }
  if (addresses.length === 0) return `host "${host}" could not be resolved`;
  if (!addresses.every(isPublicAddress)) return `must not resolve to a private, loopback, link-local or metadata address${LOCAL_RECEIVERS_HINT}`;
  return null;
}
