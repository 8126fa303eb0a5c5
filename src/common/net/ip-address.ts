import { isIP } from 'node:net';

/** The eight 16-bit words of an IPv6 address (zone id dropped, a trailing dotted IPv4 part folded in). */
export function ipv6Words(address: string): number[] {
  let text = address.toLowerCase().split('%')[0];
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number);
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes('::') ? text.split('::') : [text, null];
  const words = (part: string) => (part === '' ? [] : part.split(':').map((w) => parseInt(w, 16)));
  const first = words(head);
  if (tail === null) return first;
  const last = words(tail);
  return [...first, ...new Array<number>(8 - first.length - last.length).fill(0), ...last];
}

/** The dotted IPv4 address held in two 16-bit words. */
export function ipv4Of(high: number, low: number): string {
  return [high >> 8, high & 255, low >> 8, low & 255].join('.');
}

/**
 * An address as people write it: an IPv4 client that reached a dual-stack socket IPv4-mapped (`::ffff:192.0.2.1`)
 * is `192.0.2.1`; any other address is given back unchanged.
 */
export function plainAddress(ip: string): string {
  if (isIP(ip.split('%')[0]) !== 6) return ip;
  const w = ipv6Words(ip);
  return w.slice(0, 5).every((word) => word === 0) && w[5] === 0xffff ? ipv4Of(w[6], w[7]) : ip;
}

/**
 * Who a per-client limit counts: an IPv4 address whole (also when it reaches us IPv4-mapped), an
 * IPv6 address by its /64, since one subscriber commonly holds a whole /64 and could otherwise
 * change address for every request.
 */
export function clientNetwork(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const family = isIP(ip.split('%')[0]);
  if (family === 4) return ip;
  if (family !== 6) return 'unknown';
  const plain = plainAddress(ip);
  if (plain !== ip) return plain;
  return `${ipv6Words(ip).slice(0, 4).map((word) => word.toString(16)).join(':')}::/64`;
}
