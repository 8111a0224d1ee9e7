/**
 * The one outbound-URL policy, shared by custom tools and knowledge sources:
 * the platform itself will call these URLs, so they must not point it at its
 * own network (SSRF). docs/decisions.md ("Outbound URLs") has the rule in prose.
 *
 * What is judged here is the URL as written: an absolute http(s) URL whose
 * host is
 * - not an address of the IANA IPv4 or IPv6 special-purpose registries, in any
 *   spelling the WHATWG URL parser (the one the executor uses) accepts —
 *   `2130706433`, `0x7f.1`, `0177.0.0.1`, `127.1` all parse to 127.0.0.1 —
 *   and not an IPv6 address outside global unicast 2000::/3; IPv4 embedded in
 *   IPv6 (mapped, translated, NAT64, 6to4, Teredo) is decoded and named;
 * - not a name internal by convention (`localhost`, `*.local`, `*.internal`,
 *   `*.svc`, `*.home.arpa`, dotless names, …).
 * A *name* that resolves to such an address (DNS rebinding, a public name
 * pointing at 10.0.0.1) can only be judged when the platform resolves it at
 * execution time: the executor must re-apply `isPublicIpAddress` to the
 * address it actually connects to.
 */

import { getPublicSuffix } from 'tldts';

/** The longest outbound URL accepted (the API's bound for every URL field, `BOUNDS.url`). */
export const MAX_URL_LENGTH = 2_048;
/** The longest placeholder name, which is a custom tool's parameter name (`BOUNDS.toolParameterName`). */
export const MAX_PLACEHOLDER_NAME_LENGTH = 64;

/**
 * `{{ name }}`: a placeholder, the same in a custom tool's `url` and
 * `body_template`. The name has the charset and length of a parameter name;
 * blanks (spaces, tabs) around it are tolerated.
 */
export const PLACEHOLDER_NAME_CHARS = 'A-Za-z0-9_.-';
export function placeholderPattern(): RegExp {
  return new RegExp(`\\{\\{[ \\t]*([${PLACEHOLDER_NAME_CHARS}]{1,${MAX_PLACEHOLDER_NAME_LENGTH}})[ \\t]*\\}\\}`, 'g');
}

// ---------- IP addresses ----------

interface Ipv4Block {
  base: number;
  bits: number;
  name: string;
}

function ipv4Block(cidr: string, name: string): Ipv4Block {
  const [address, bits] = cidr.split('/');
  return { base: ipv4ToInt(address)!, bits: Number(bits), name: `${name} ${cidr}` };
}

/** IANA IPv4 Special-Purpose Address Registry, every entry; plus multicast (IPv4 address space registry). */
const IPV4_SPECIAL: Ipv4Block[] = [
  ipv4Block('0.0.0.0/8', '"this network"'),
  ipv4Block('10.0.0.0/8', 'private-use'),
  ipv4Block('100.64.0.0/10', 'shared address space'), // 100.100.100.200 is a metadata endpoint
  ipv4Block('127.0.0.0/8', 'loopback'),
  ipv4Block('169.254.0.0/16', 'link-local'), // 169.254.169.254 metadata
  ipv4Block('172.16.0.0/12', 'private-use'),
  ipv4Block('192.0.0.0/29', 'IPv4 service continuity prefix'),
  ipv4Block('192.0.0.8/32', 'IPv4 dummy address'),
  ipv4Block('192.0.0.9/32', 'PCP anycast'),
  ipv4Block('192.0.0.10/32', 'TURN anycast'),
  ipv4Block('192.0.0.170/31', 'NAT64/DNS64 discovery'),
  ipv4Block('192.0.0.0/24', 'IETF protocol assignments'),
  ipv4Block('192.0.2.0/24', 'documentation'),
  ipv4Block('192.31.196.0/24', 'AS112-v4'),
  ipv4Block('192.52.193.0/24', 'AMT'),
  ipv4Block('192.88.99.0/24', '6to4 relay anycast (deprecated)'),
  ipv4Block('192.168.0.0/16', 'private-use'),
  ipv4Block('192.175.48.0/24', 'AS112 direct delegation'),
  ipv4Block('198.18.0.0/15', 'benchmarking'),
  ipv4Block('198.51.100.0/24', 'documentation'),
  ipv4Block('203.0.113.0/24', 'documentation'),
  ipv4Block('224.0.0.0/4', 'multicast'),
  ipv4Block('255.255.255.255/32', 'limited broadcast'),
  ipv4Block('240.0.0.0/4', 'reserved'),
];

/** Dotted-quad decimal IPv4 (the canonical form the URL parser produces) as an unsigned integer, or null. */
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

function bytesToIpv4(bytes: number[]): number {
  return ((bytes[0] << 24) >>> 0) + (bytes[1] << 16) + (bytes[2] << 8) + bytes[3];
}

/** The special-purpose block an IPv4 address belongs to, or null when it is a public address. */
function ipv4SpecialBlock(value: number): string | null {
  for (const block of IPV4_SPECIAL) {
    const size = 2 ** (32 - block.bits);
    if (value >= block.base && value < block.base + size) return block.name;
  }
  return null;
}

/** 16 bytes of an IPv6 address (with or without brackets, dotted IPv4 tail allowed), or null. */
export function parseIpv6(input: string): number[] | null {
  let address = input.startsWith('[') && input.endsWith(']') ? input.slice(1, -1) : input;
  if (address.includes('%')) return null; // zone ids never belong in a URL host
  let tail: number[] = [];
  const lastColon = address.lastIndexOf(':');
  if (lastColon === -1) return null;
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

interface Ipv6Block {
  prefix: number[];
  bits: number;
  name: string;
  /** where the block carries IPv4 addresses: each is decoded and judged too, to name what is inside */
  embedded?: (bytes: number[]) => number[][];
}

function ipv6Block(cidr: string, name: string, embedded?: Ipv6Block['embedded']): Ipv6Block {
  const [address, bits] = cidr.split('/');
  return { prefix: parseIpv6(address)!, bits: Number(bits), name: `${name} ${cidr}`, embedded };
}

const last32 = (bytes: number[]) => [bytes.slice(12, 16)];
/** RFC 6052: where the IPv4 address sits for each network-specific prefix length a /48 operator may pick. */
const rfc6052Positions = (bytes: number[]) => [
  bytes.slice(12, 16), // /96
  [bytes[9], bytes[10], bytes[11], bytes[12]], // /64
  [bytes[7], bytes[9], bytes[10], bytes[11]], // /56
  [bytes[6], bytes[7], bytes[9], bytes[10]], // /48
];
/** Teredo: the server's IPv4 in bits 32–63, the client's in the last 32 bits, inverted. */
const teredo = (bytes: number[]) => [bytes.slice(4, 8), bytes.slice(12, 16).map((byte) => byte ^ 0xff)];

/**
 * IANA IPv6 Special-Purpose Address Registry, every entry (more specific
 * entries first, so the name is the most precise one), plus the forms that
 * embed IPv4 outside it (SIIT-translated, IPv4-compatible) and the
 * non-unicast ranges of the address space registry.
 */
const IPV6_SPECIAL: Ipv6Block[] = [
  ipv6Block('::1/128', 'loopback'),
  ipv6Block('::/128', 'unspecified'),
  ipv6Block('::ffff:0:0/96', 'IPv4-mapped', last32),
  ipv6Block('::ffff:0:0:0/96', 'IPv4-translated (SIIT)', last32),
  ipv6Block('::/96', 'IPv4-compatible (deprecated)', last32),
  ipv6Block('64:ff9b::/96', 'IPv4/IPv6 translation (NAT64)', last32),
  ipv6Block('64:ff9b:1::/48', 'local-use IPv4/IPv6 translation', rfc6052Positions),
  ipv6Block('100::/64', 'discard-only'),
  ipv6Block('100:0:0:1::/64', 'dummy prefix'),
  ipv6Block('2001::/32', 'Teredo', teredo),
  ipv6Block('2001:1::1/128', 'PCP anycast'),
  ipv6Block('2001:1::2/128', 'TURN anycast'),
  ipv6Block('2001:1::3/128', 'DNS-SD SRP anycast'),
  ipv6Block('2001:2::/48', 'benchmarking'),
  ipv6Block('2001:3::/32', 'AMT'),
  ipv6Block('2001:4:112::/48', 'AS112-v6'),
  ipv6Block('2001:10::/28', 'ORCHID (deprecated)'),
  ipv6Block('2001:20::/28', 'ORCHIDv2'),
  ipv6Block('2001:30::/28', 'drone remote ID'),
  ipv6Block('2001::/23', 'IETF protocol assignments'),
  ipv6Block('2001:db8::/32', 'documentation'),
  ipv6Block('2002::/16', '6to4', (bytes) => [bytes.slice(2, 6)]),
  ipv6Block('2620:4f:8000::/48', 'AS112 direct delegation'),
  ipv6Block('3fff::/20', 'documentation'),
  ipv6Block('5f00::/16', 'segment routing (SRv6) SIDs'),
  ipv6Block('fc00::/7', 'unique-local'), // fd00:ec2::254 metadata
  ipv6Block('fe80::/10', 'link-local'),
  ipv6Block('fec0::/10', 'site-local (deprecated)'),
  ipv6Block('ff00::/8', 'multicast'),
];

function inIpv6Block(bytes: number[], block: Ipv6Block): boolean {
  for (let bit = 0; bit < block.bits; bit += 8) {
    const take = Math.min(8, block.bits - bit);
    const mask = (0xff << (8 - take)) & 0xff;
    if ((bytes[bit / 8] & mask) !== (block.prefix[bit / 8] & mask)) return false;
  }
  return true;
}

/** Why an IPv6 address is not a public destination, or null when it is one. */
function ipv6Problem(bytes: number[]): string | null {
  const block = IPV6_SPECIAL.find((candidate) => inIpv6Block(bytes, candidate));
  if (block) {
    const inner = (block.embedded?.(bytes) ?? []).map((v4) => ipv4SpecialBlock(bytesToIpv4(v4))).find((name) => name !== null);
    return inner ? `${block.name}, embedding ${inner}` : block.name;
  }
  // IANA allocates only 2000::/3 for global unicast; anything else cannot be a public destination
  if ((bytes[0] & 0xe0) !== 0x20) return 'outside global unicast 2000::/3';
  return null;
}

/**
 * True when `address` (a literal IPv4 in dotted form or IPv6, brackets
 * optional) is a public destination. For the executor: re-check the resolved
 * address with this before connecting.
 */
export function isPublicIpAddress(address: string): boolean {
  const v4 = ipv4ToInt(address);
  if (v4 !== null) return ipv4SpecialBlock(v4) === null;
  const v6 = parseIpv6(address);
  return v6 !== null && ipv6Problem(v6) === null;
}

// ---------- host names ----------

/** Last labels that name a private network by convention or by the special-use names registry. */
const INTERNAL_SUFFIXES = [
  'localhost',
  'local', // mDNS, *.cluster.local
  'internal', // host.docker.internal, metadata.google.internal, *.ec2.internal
  'svc', // kubernetes.default.svc
  'arpa', // home.arpa, reverse-lookup names
  'localdomain',
  'lan',
  'home',
  'corp',
  'test',
  'invalid',
  'onion',
  'alt',
];
/** Single names that reach a metadata service from inside a cloud. */
const INTERNAL_NAMES = new Set(['metadata.goog']);

/**
 * What the policy refuses, in words, for the OpenAPI description of every
 * outbound URL field (built from the lists above, so it cannot drift).
 */
export const OUTBOUND_URL_RULES =
  'No user info (`user:pw@`), whitespace, control characters or backslashes. ' +
  'The host may not be an address of the IANA special-purpose registries (IPv4, IPv6, IPv4 embedded in IPv6), a multicast address, ' +
  'an IPv6 address outside global unicast `2000::/3` (site-local `fec0::/10` included), ' +
  `nor a name internal by convention: single-label names, ${[...INTERNAL_NAMES].map((name) => `\`${name}\``).join(', ')} ` +
  `and names ending in ${INTERNAL_SUFFIXES.map((suffix) => `\`.${suffix}\``).join(', ')}.`;

function internalNameProblem(host: string): string | null {
  const labels = host.split('.');
  if (INTERNAL_NAMES.has(host) || INTERNAL_SUFFIXES.includes(labels[labels.length - 1])) {
    return 'must not be a host name internal by convention (localhost, *.local, *.internal, *.svc, *.home.arpa, …)';
  }
  if (labels.length === 1) return 'must not be a single-label host name: it resolves through the local search domains';
  return null;
}

// ---------- public suffixes (for placeholders in the host) ----------

/**
 * The Public Suffix List comes with `tldts`, a maintained package updated with
 * the list (its version is pinned in the lock file): ICANN section only, so a
 * placeholder may pick `{{shop}}.myshopify.com` — the shop is a tenant of one
 * company's service, not a site of its own. The input is a host the URL parser
 * has already canonicalized (lower case, ASCII), never an address.
 */
const PUBLIC_SUFFIX_OPTIONS = { allowPrivateDomains: false, extractHostname: false, detectIp: false, validateHostname: false } as const;

/** How many rightmost labels of `labels` form the public suffix (ICANN section of the Public Suffix List). */
export function publicSuffixLength(labels: string[]): number {
  const suffix = getPublicSuffix(labels.join('.'), PUBLIC_SUFFIX_OPTIONS);
  // the list's default rule `*`: an unknown last label is a suffix by itself
  return suffix ? suffix.split('.').length : 1;
}

// ---------- the policy ----------

interface UrlPolicyOptions {
  /** the URL may carry `{{param}}` placeholders (custom tools): in path, query, fragment, and in host labels left of the registrable domain */
  allowPlaceholders?: boolean;
}

/** Stands for a placeholder while the URL is taken apart: control characters are refused in what is written. */
const MARK = '\u0001';
const ADDRESS_PROBLEM = 'must not point at a loopback, private, link-local, reserved or other special-purpose address';

/**
 * Checks an outbound URL against the policy. Returns the problem (to put
 * under the field's name in a 422) or null when the URL is acceptable.
 * Problems never repeat the URL itself.
 */
export function outboundUrlProblem(value: string, options: UrlPolicyOptions = {}): string | null {
  if (value.length === 0) return 'must not be empty';
  if (value.length > MAX_URL_LENGTH) return `must be at most ${MAX_URL_LENGTH} characters`;
  // placeholders stand aside first, so `{{ q }}` is judged as `{{q}}` is
  const literal = options.allowPlaceholders ? value.replace(placeholderPattern(), '') : value;
  // the URL parser silently strips or percent-encodes these; a URL that relies on that is ambiguous
  // eslint-disable-next-line no-control-regex -- control characters are exactly what is refused
  if (/[\s\u0000-\u001f\u007f\\]/.test(literal)) return 'must not contain whitespace, control characters or backslashes';
  const marked = options.allowPlaceholders ? value.replace(placeholderPattern(), MARK) : value;
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(marked);
  if (!scheme) return marked.split('://')[0].includes(MARK) ? 'must spell out its scheme: no placeholder there' : 'must be an absolute http or https URL';
  if (!['http', 'https'].includes(scheme[1].toLowerCase())) return 'must use the http or https scheme';

  const authority = marked.slice(scheme[0].length).split(/[/?#]/, 1)[0];
  const hostAndPort = authority.slice(authority.lastIndexOf('@') + 1);
  if (authority.includes('@')) return 'must not contain user credentials; use auth instead';
  if (hostAndPort.includes(MARK)) {
    const problem = hostPlaceholderProblem(hostAndPort);
    if (problem) return problem;
  }

  let url: URL;
  try {
    url = new URL(marked.split(MARK).join('x'));
  } catch {
    return 'must be an absolute http or https URL';
  }
  if (url.username !== '' || url.password !== '') return 'must not contain user credentials; use auth instead';

  // the parser has already canonicalized decimal, hex, octal and short IPv4 forms to dotted quads, and lower-cased names
  const host = url.hostname.replace(/\.+$/, '');
  if (host === '') return 'must name a host';
  if (host.startsWith('[')) {
    const problem = ipv6Problem(parseIpv6(host) ?? []);
    return problem ? `${ADDRESS_PROBLEM} (${problem})` : null;
  }
  const v4 = ipv4ToInt(host);
  if (v4 !== null) {
    const block = ipv4SpecialBlock(v4);
    return block ? `${ADDRESS_PROBLEM} (${block})` : null;
  }
  const nameProblem = internalNameProblem(host);
  if (nameProblem) return nameProblem;

  if (hostAndPort.includes(MARK)) {
    // the registrable domain (public suffix + one label) must be written out, so a placeholder picks a tenant, never a site
    const literalLabels = hostAndPort.replace(/:[^:\]]*$/, '').replace(/\.+$/, '').split(/[.\u3002\uff0e\uff61]/);
    const literalCount = literalLabels.length - 1 - literalLabels.map((label) => label.includes(MARK)).lastIndexOf(true);
    if (literalCount < publicSuffixLength(host.split('.')) + 1) return REGISTRABLE_PROBLEM;
  }
  return null;
}

const REGISTRABLE_PROBLEM =
  'may use a placeholder only for labels left of the registrable domain, which must be written out (as in https://{{subdomain}}.example.com/)';

/** Placeholders in the authority: allowed in host labels only, never for the port or any part of an IP address. */
function hostPlaceholderProblem(hostAndPort: string): string | null {
  if (hostAndPort.startsWith('[')) return 'must not use a placeholder in an IP address';
  const colon = hostAndPort.indexOf(':');
  const host = colon === -1 ? hostAndPort : hostAndPort.slice(0, colon);
  if (colon !== -1 && hostAndPort.slice(colon).includes(MARK)) return 'must spell out its port: no placeholder there';
  const labels = host.replace(/\.+$/, '').split(/[.\u3002\uff0e\uff61]/);
  const last = labels[labels.length - 1];
  // the URL parser reads a host whose last label is a number as an IPv4 address
  if (/^(\d+|0x[0-9a-f]*)$/i.test(last)) return 'must not use a placeholder in an IP address';
  if (last.includes(MARK) || labels.every((label) => label.includes(MARK))) return REGISTRABLE_PROBLEM;
  return null;
}
