// Where a webhook may point: an https URL whose host is not, and does not resolve to, an address
// inside a private network. Checked at creation and again at each delivery, which connects to the
// very address it checked, so a name that changes its answer in between cannot reach inside.
import { lookup } from 'node:dns/promises';
import { BlockList, isIP } from 'node:net';

// One list per family: Node's BlockList matches an IPv4 address against IPv6 rules too.
const REFUSED_V4 = new BlockList();
const REFUSED_V6 = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8], // "this network", the unspecified address
  ['10.0.0.0', 8], ['172.16.0.0', 12], ['192.168.0.0', 16], // RFC 1918
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local (cloud metadata services among them)
  ['192.0.0.0', 24], ['198.18.0.0', 15], // IETF protocol assignments, benchmarking
  ['224.0.0.0', 4], ['240.0.0.0', 4], // multicast, reserved and broadcast
] as const) REFUSED_V4.addSubnet(network, prefix, 'ipv4');
for (const [network, prefix] of [
  ['::', 128], ['::1', 128], // unspecified, loopback
  ['::', 96], ['::ffff:0:0', 96], // IPv4-compatible and IPv4-mapped: an IPv4 address in disguise
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], // unique local, link-local, site-local
  ['ff00::', 8], // multicast
] as const) REFUSED_V6.addSubnet(network, prefix, 'ipv6');

/** Whether a literal address is one a webhook must not reach. */
export function isPrivateAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  return family === 4 ? REFUSED_V4.check(address, 'ipv4') : REFUSED_V6.check(address, 'ipv6');
}

/** The URL's host as an address or name: IPv6 literals lose their brackets. */
export function hostOf(url: URL): string {
  return url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
}

export interface Resolved {
  address: string;
  family: 4 | 6;
}

export class PrivateAddress extends Error {
  readonly code = 'EPRIVATE';
}

/**
 * The address to connect to: the literal itself, or the name's first answer. Every answer is
 * checked: a name that resolves to a private address among public ones is refused.
 */
export async function resolveChecked(host: string, allowPrivate: boolean): Promise<Resolved> {
  const literal = isIP(host);
  const answers = literal !== 0
    ? [{ address: host, family: literal as 4 | 6 }]
    : (await lookup(host, { all: true, order: 'verbatim' })).map((a) => ({ address: a.address, family: a.family as 4 | 6 }));
  if (answers.length === 0) throw Object.assign(new Error(`${host} has no address`), { code: 'ENOTFOUND' });
  if (!allowPrivate && answers.some((a) => isPrivateAddress(a.address))) throw new PrivateAddress(`${host} points at a private address`);
  return answers[0]!;
}
