import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

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
  ['::', 128],
  ['::1', 128],
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local, including fd00:ec2::254 metadata
  ['fe80::', 10], // link-local
  ['fec0::', 10], // site-local (deprecated)
  ['ff00::', 8], // multicast
] as const) {
  BLOCKED.addSubnet(net, prefix, 'ipv6');
}

/** The IPv4 address carried inside an IPv6 one (mapped, NAT64, 6to4, IPv4-compatible), if any. */
function embeddedIpv4(address: string): string | null {
  const lower = address.toLowerCase();
  const dotted = /^(?:::ffff:|::ffff:0:|64:ff9b::|::)(\d+\.\d+\.\d+\.\d+)$/.exec(lower);
  if (dotted) return dotted[1];
  const hex = /^(?:::ffff:|64:ff9b::)([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(lower);
  if (hex) {
    const high = parseInt(hex[1], 16);
    const low = parseInt(hex[2], 16);
    return [high >> 8, high & 255, low >> 8, low & 255].join('.');
  }
  const sixToFour = /^2002:([0-9a-f]{1,4}):([0-9a-f]{1,4}):/.exec(lower);
  if (sixToFour) {
    const high = parseInt(sixToFour[1], 16);
    const low = parseInt(sixToFour[2], 16);
    return [high >> 8, high & 255, low >> 8, low & 255].join('.');
  }
  return null;
}

/** True when a delivery may connect to this IP address. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return !BLOCKED.check(address, 'ipv4');
  if (family === 6) {
    const inner = embeddedIpv4(address);
    if (inner !== null) return isPublicAddress(inner);
    return !BLOCKED.check(address, 'ipv6');
  }
  return false;
}

/** Every refusal that WEBHOOK_ALLOW_PRIVATE_URLS lifts says so, for whoever tries a local receiver. */
const LOCAL_RECEIVERS_HINT = '; WEBHOOK_ALLOW_PRIVATE_URLS=true allows http:// and local addresses for local development';

export type Resolver = (hostname: string) => Promise<string[]>;

const systemResolver: Resolver = async (hostname) => (await lookup(hostname, { all: true, verbatim: true })).map((a) => a.address);

/**
 * Checks a webhook url. Answers a problem in words, or null when the url is acceptable. With
 * `allowPrivate` (tests and local development) http and any address are accepted.
 */
export async function checkWebhookUrl(raw: string, options: { allowPrivate: boolean; resolve?: Resolver }): Promise<string | null> {
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
