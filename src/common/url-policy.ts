/**
 * The one outbound-URL policy, shared by custom tools and knowledge sources:
 * the platform itself will call these URLs, so they must not point it at its
 * own network (SSRF).
 *
 * What is checked here is the URL as written: an absolute http(s) URL whose
 * host is not a loopback, link-local, private-range, reserved or metadata
 * address written as a literal, in any spelling the WHATWG URL parser (the
 * one the caller uses) accepts: `http://2130706433`, `http://0x7f.1`,
 * `http://0177.0.0.1` and `http://127.1` all parse to 127.0.0.1, and
 * `[::ffff:127.0.0.1]` is IPv4-mapped IPv6. A *name* that resolves to such an
 * address (DNS rebinding, a public name pointing at 10.0.0.1) can only be
 * judged when the platform resolves it at execution time; that check belongs
 * to the executor, which must re-apply `isPublicIpAddress` to the address it
 * actually connects to.
 */

import { BOUNDS } from './input-bounds';

export const MAX_URL_LENGTH = BOUNDS.url;

/** Host names that always mean "this machine" or a cloud metadata service. */
const BLOCKED_HOST_NAMES = new Set([
  'localhost',
  'localhost.localdomain',
  'ip6-localhost',
  'ip6-loopback',
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
]);

/** IPv4 ranges that are not publicly routable (RFC 6890 special-purpose) or are metadata endpoints. */
const BLOCKED_IPV4: Array<[string, number]> = [
  ['0.0.0.0', 8], // "this network", 0.0.0.0
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // shared address space (CGNAT; 100.100.100.200 is a metadata endpoint)
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, includes 169.254.169.254 metadata
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments (192.0.0.192 is an Oracle metadata address)
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay anycast
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, includes 255.255.255.255
];

function ipv4ToInt(address: string): number | null {
  const parts = address.split('.');
  if (parts.length !== 4) return null;
  let value = 0;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part)) return null;
    const octet = Number(part);
    if (octet > 255) return null;
    value = value * 256 + octet;
  }
  return value;
}

function inIpv4Range(value: number, base: string, bits: number): boolean {
  const start = ipv4ToInt(base)!;
  const size = 2 ** (32 - bits);
  return value >= start && value < start + size;
}

function isPublicIpv4(address: string): boolean {
  const value = ipv4ToInt(address);
  if (value === null) return false;
  return !BLOCKED_IPV4.some(([base, bits]) => inIpv4Range(value, base, bits));
}

/** 16 bytes of an IPv6 address (with or without brackets, dotted IPv4 tail allowed), or null. */
export function parseIpv6(input: string): number[] | null {
  let address = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  if (address.includes('%')) return null; // zone ids never belong in a URL host
  let tail: number[] = [];
  const lastColon = address.lastIndexOf(':');
  if (address.slice(lastColon + 1).includes('.')) {
    const v4 = ipv4ToInt(address.slice(lastColon + 1));
    if (v4 === null) return null;
    tail = [(v4 >>> 24) & 255, (v4 >>> 16) & 255, (v4 >>> 8) & 255, v4 & 255];
    address = address.slice(0, lastColon + 1) + '0:0';
  }
  const halves = address.split('::');
  if (halves.length > 2) return null;
  const parseGroups = (text: string) => (text === '' ? [] : text.split(':'));
  const head = parseGroups(halves[0]);
  const rest = halves.length === 2 ? parseGroups(halves[1]) : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill('0'), ...rest];
  const bytes: number[] = [];
  for (const group of groups) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(group)) return null;
    const value = parseInt(group, 16);
    bytes.push(value >> 8, value & 255);
  }
  if (tail.length) bytes.splice(12, 4, ...tail);
  return bytes;
}

function isPublicIpv6(bytes: number[]): boolean {
  const prefixIs = (prefix: number[]) => prefix.every((byte, index) => bytes[index] === byte);
  const embeddedV4 = (offset: number) => bytes.slice(offset, offset + 4).join('.');
  const allZero = (from: number, to: number) => bytes.slice(from, to).every((byte) => byte === 0);

  if (allZero(0, 16)) return false; // :: unspecified
  if (allZero(0, 15) && bytes[15] === 1) return false; // ::1 loopback
  // IPv4-mapped ::ffff:a.b.c.d and IPv4-compatible ::a.b.c.d carry an IPv4 address: judge that
  if (allZero(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff) return isPublicIpv4(embeddedV4(12));
  if (allZero(0, 12)) return isPublicIpv4(embeddedV4(12));
  // NAT64 64:ff9b::/96 and 6to4 2002::/16 also embed an IPv4 address
  if (prefixIs([0x00, 0x64, 0xff, 0x9b]) && allZero(4, 12)) return isPublicIpv4(embeddedV4(12));
  if (prefixIs([0x20, 0x02])) return isPublicIpv4(embeddedV4(2));
  if ((bytes[0] & 0xfe) === 0xfc) return false; // fc00::/7 unique local, includes fd00:ec2::254 metadata
  if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0x80) return false; // fe80::/10 link-local
  if (bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0xc0) return false; // fec0::/10 site-local (deprecated)
  if (bytes[0] === 0xff) return false; // multicast
  if (prefixIs([0x20, 0x01, 0x0d, 0xb8])) return false; // documentation
  if (prefixIs([0x01, 0x00]) && allZero(2, 8)) return false; // discard-only 100::/64
  return true;
}

/**
 * True when `address` (a literal IPv4 in dotted form or IPv6, brackets
 * optional) is publicly routable. For the executor: re-check the resolved
 * address with this before connecting.
 */
export function isPublicIpAddress(address: string): boolean {
  if (ipv4ToInt(address) !== null) return isPublicIpv4(address);
  const v6 = parseIpv6(address);
  return v6 !== null && isPublicIpv6(v6);
}

/** Replace `{{param}}` placeholders with a harmless token before parsing a templated URL. */
const PLACEHOLDER = /\{\{[^{}]*\}\}/g;

export interface UrlPolicyOptions {
  /** the URL may carry `{{param}}` placeholders outside its scheme and host (custom tools) */
  allowPlaceholders?: boolean;
}

/**
 * Checks an outbound URL against the policy. Returns the problem (to put
 * under the field's name in a 422) or null when the URL is acceptable.
 * Problems never repeat the URL itself.
 */
export function outboundUrlProblem(value: string, options: UrlPolicyOptions = {}): string | null {
  if (value.length === 0) return 'must not be empty';
  if (value.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  // the URL parser silently strips or percent-encodes these; a URL that relies on that is ambiguous
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\s\u0000-\u001f\u007f\\]/.test(value)) return 'must not contain whitespace, control characters or backslashes';
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(value);
  if (!scheme) return 'must be an absolute http or https URL';
  if (!['http', 'https'].includes(scheme[1].toLowerCase())) return 'must use the http or https scheme';
  const authority = value.slice(scheme[0].length).split(/[/?#]/, 1)[0];
  if (authority.includes('{{') || authority.includes('}}')) return 'must not have placeholders in the host or port';

  let candidate = value;
  if (options.allowPlaceholders) candidate = value.replace(PLACEHOLDER, 'x');
  else if (value.includes('{{')) return 'must not contain {{placeholders}}';

  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use the http or https scheme';
  if (url.username !== '' || url.password !== '') return 'must not contain user credentials; use auth instead';

  // the parser has already canonicalized decimal, hex, octal and short IPv4 forms to dotted quads
  const host = url.hostname.toLowerCase().replace(/\.+$/, '');
  if (host === '') return 'must name a host';
  if (host.startsWith('[')) {
    return isPublicIpAddress(host) ? null : 'must not point at a loopback, link-local, private, reserved or metadata address';
  }
  if (ipv4ToInt(host) !== null) {
    return isPublicIpv4(host) ? null : 'must not point at a loopback, link-local, private, reserved or metadata address';
  }
  if (BLOCKED_HOST_NAMES.has(host) || host.endsWith('.localhost')) {
    return 'must not point at a loopback or metadata host name';
  }
  return null;
}
