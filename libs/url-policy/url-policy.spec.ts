import { isPublicIpAddress, outboundUrlProblem, parseIpv6, publicSuffixLength } from './url-policy';

const TOOL = { allowPlaceholders: true };

/**
 * The policy as a table: [url, expected], where expected is null (accepted)
 * or a fragment of the problem. Refusals name the registry block, so the
 * table also proves which entry (and which embedded IPv4) was recognised.
 */
const CASES: Array<[string, string | null]> = [
  // ---- accepted: public names and addresses
  ['https://api.example.com/v1/items', null],
  ['http://example.com', null],
  ['https://example.com:8443/path?q=1#frag', null],
  ['https://8.8.8.8/dns', null],
  ['https://[2606:4700:4700::1111]/', null],
  ['https://sub.domain.example.org./x', null],
  ['HTTPS://API.EXAMPLE.COM/X', null],
  ['https://127.0.0.1.nip.io/', null], // a name: resolved (and judged) only at execution time
  ['https://172.15.255.255/', null],
  ['https://172.32.0.0/', null],
  ['https://192.0.1.1/', null],
  ['https://100.63.255.255/', null],
  ['https://100.128.0.0/', null],
  ['https://198.20.0.1/', null],
  ['https://[2001:4860:4860::8888]/', null],
  ['https://[2001:200::1]/', null], // just past IETF protocol assignments 2001::/23
  ['https://example.local.com/', null], // `local` only as the last label

  // ---- not absolute http(s)
  ['', 'empty'],
  ['/relative/path', 'absolute'],
  ['example.com/path', 'absolute'],
  ['ftp://example.com/', 'scheme'],
  ['file:///etc/passwd', 'scheme'],
  ['javascript:alert(1)', 'absolute'],
  ['http//x', 'absolute'],
  ['http://', 'absolute'],
  [' https://example.com', 'whitespace'],
  ['https://exa mple.com', 'whitespace'],
  ['https://example.com\\@127.0.0.1/', 'backslash'],
  ['https://user:pass@example.com/', 'credentials'],
  ['https://' + 'a'.repeat(2100) + '.com', 'at most'],

  // ---- IPv4 special-purpose registry, every entry
  ['http://0.0.0.0/', '"this network"'],
  ['http://0/', '"this network"'],
  ['http://0.1.2.3/', '"this network"'],
  ['http://10.0.0.1/', 'private-use 10.0.0.0/8'],
  ['http://100.64.0.1/', 'shared address space'],
  ['http://100.100.100.200/', 'shared address space'],
  ['http://127.0.0.1/', 'loopback'],
  ['http://127.10.20.30:8080/', 'loopback'],
  ['http://169.254.169.254/latest/meta-data/', 'link-local'],
  ['http://172.16.0.1/', 'private-use 172.16.0.0/12'],
  ['http://172.31.255.255/', 'private-use 172.16.0.0/12'],
  ['http://192.0.0.1/', 'IPv4 service continuity prefix'],
  ['http://192.0.0.8/', 'dummy'],
  ['http://192.0.0.9/', 'PCP anycast'],
  ['http://192.0.0.10/', 'TURN anycast'],
  ['http://192.0.0.170/', 'NAT64/DNS64 discovery'],
  ['http://192.0.0.171/', 'NAT64/DNS64 discovery'],
  ['http://192.0.0.192/', 'IETF protocol assignments'],
  ['http://192.0.2.1/', 'documentation'],
  ['http://192.31.196.1/', 'AS112-v4'],
  ['http://192.52.193.1/', 'AMT'],
  ['http://192.88.99.1/', '6to4 relay anycast'],
  ['http://192.168.1.1/', 'private-use 192.168.0.0/16'],
  ['http://192.175.48.1/', 'AS112 direct delegation'],
  ['http://198.18.0.1/', 'benchmarking'],
  ['http://198.19.255.255/', 'benchmarking'],
  ['http://198.51.100.1/', 'documentation'],
  ['http://203.0.113.1/', 'documentation'],
  ['http://224.0.0.1/', 'multicast'],
  ['http://240.0.0.1/', 'reserved'],
  ['http://255.255.255.255/', 'limited broadcast'],
  // odd spellings, canonicalized by the URL parser before the check
  ['http://2130706433/', 'loopback'],
  ['http://0x7f000001/', 'loopback'],
  ['http://0x7f.1/', 'loopback'],
  ['http://0177.0.0.1/', 'loopback'],
  ['http://127.1/', 'loopback'],
  ['http://017700000001/', 'loopback'],
  ['http://0xa9fea9fe/', 'link-local'],
  ['http://0300.0250.0.1/', 'private-use 192.168.0.0/16'],
  ['http://127.0.0.1./', 'loopback'],

  // ---- IPv6 special-purpose registry, every entry
  ['http://[::1]/', 'loopback'],
  ['http://[0:0:0:0:0:0:0:1]/', 'loopback'],
  ['http://[::]/', 'unspecified'],
  ['http://[::ffff:127.0.0.1]/', 'IPv4-mapped ::ffff:0:0/96, embedding loopback'],
  ['http://[::ffff:7f00:1]/', 'IPv4-mapped ::ffff:0:0/96, embedding loopback'],
  ['http://[::ffff:169.254.169.254]/', 'IPv4-mapped ::ffff:0:0/96, embedding link-local'],
  ['http://[::ffff:8.8.8.8]/', 'IPv4-mapped'], // the prefix itself is not globally reachable
  ['http://[::ffff:0:7f00:1]/', 'IPv4-translated (SIIT) ::ffff:0:0:0/96, embedding loopback'],
  ['http://[::127.0.0.1]/', 'IPv4-compatible (deprecated) ::/96, embedding loopback'],
  ['http://[64:ff9b::a9fe:a9fe]/', 'NAT64) 64:ff9b::/96, embedding link-local'],
  ['http://[64:ff9b::127.0.0.1]/', 'NAT64) 64:ff9b::/96, embedding loopback'],
  ['http://[64:ff9b::8.8.8.8]/', 'NAT64'],
  ['http://[64:ff9b:1::7f00:1]/', 'local-use IPv4/IPv6 translation 64:ff9b:1::/48, embedding loopback'],
  ['http://[64:ff9b:1:808:8:800::]/', 'local-use IPv4/IPv6 translation'],
  ['http://[100::1]/', 'discard-only'],
  ['http://[100:0:0:1::1]/', 'dummy prefix'],
  ['http://[2001:0:4136:e378:8000:63bf:80ff:fffe]/', 'Teredo 2001::/32, embedding loopback'],
  ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', 'Teredo'],
  ['http://[2001:1::1]/', 'PCP anycast'],
  ['http://[2001:1::2]/', 'TURN anycast'],
  ['http://[2001:1::3]/', 'DNS-SD SRP anycast'],
  ['http://[2001:2::1]/', 'benchmarking'],
  ['http://[2001:3::1]/', 'AMT'],
  ['http://[2001:4:112::1]/', 'AS112-v6'],
  ['http://[2001:10::1]/', 'ORCHID (deprecated)'],
  ['http://[2001:20::1]/', 'ORCHIDv2'],
  ['http://[2001:30::1]/', 'drone remote ID'],
  ['http://[2001:1ff::1]/', 'IETF protocol assignments'],
  ['http://[2001:db8::1]/', 'documentation'],
  ['http://[2002:7f00:1::]/', '6to4 2002::/16, embedding loopback'],
  ['http://[2002:a00:1::1]/', '6to4 2002::/16, embedding private-use 10.0.0.0/8'],
  ['http://[2002:808:808::1]/', '6to4'],
  ['http://[2620:4f:8000::1]/', 'AS112 direct delegation'],
  ['http://[3fff::1]/', 'documentation'],
  ['http://[5f00::1]/', 'segment routing'],
  ['http://[fc00::1]/', 'unique-local'],
  ['http://[fd00:ec2::254]/', 'unique-local'],
  ['http://[FD12:3456::1]/', 'unique-local'],
  ['http://[fe80::1]/', 'link-local'],
  ['http://[febf::1]/', 'link-local'],
  ['http://[fec0::1]/', 'site-local'],
  ['http://[ff02::1]/', 'multicast'],
  ['http://[4000::1]/', 'outside global unicast'],
  ['http://[fe80::1%25eth0]/', 'absolute'], // zone ids: the URL parser refuses them

  // ---- names internal by convention
  ['http://localhost/', 'internal by convention'],
  ['http://LOCALHOST./', 'internal by convention'],
  ['http://api.localhost/', 'internal by convention'],
  ['http://printer.local/', 'internal by convention'],
  ['http://db.svc.cluster.local/', 'internal by convention'],
  ['http://kubernetes.default.svc/', 'internal by convention'],
  ['http://host.docker.internal/', 'internal by convention'],
  ['http://metadata.google.internal/computeMetadata/v1/', 'internal by convention'],
  ['http://nas.home.arpa/', 'internal by convention'],
  ['http://1.0.0.127.in-addr.arpa/', 'internal by convention'],
  ['http://localhost.localdomain/', 'internal by convention'],
  ['http://router.lan/', 'internal by convention'],
  ['http://site.test/', 'internal by convention'],
  ['http://x.invalid/', 'internal by convention'],
  ['http://metadata.goog/', 'internal by convention'],
  ['http://metadata/', 'single-label'],
  ['http://intranet/', 'single-label'],
];

describe('outbound URL policy: the table', () => {
  it.each(CASES)('%s', (url, expected) => {
    const problem = outboundUrlProblem(url);
    if (expected === null) expect(problem).toBeNull();
    else expect(problem).toContain(expected);
    // a custom tool URL without placeholders is judged the same
    expect(outboundUrlProblem(url, TOOL)).toBe(problem);
  });

  it('does not repeat the URL in its problem text', () => {
    const problem = outboundUrlProblem('http://10.1.2.3/secret-path');
    expect(problem).not.toContain('10.1.2.3');
    expect(problem).not.toContain('secret-path');
  });
});

/** Placeholders (custom tools only): where they may stand, and that the address checks still apply around them. */
const PLACEHOLDER_CASES: Array<[string, string | null]> = [
  ['https://api.example.com/tickets/{{id}}?expand={{expand}}#{{frag}}', null],
  ['https://api.example.com/orders/{{ id }}', null],
  ['https://api.example.com/orders/{{\tid\t}}', null],
  ['https://api.example.com/users/{{user.id}}/{{order-id}}', null],
  ['https://{{subdomain}}.zendesk.com/api/v2/tickets', null],
  ['https://{{SUBDOMAIN}}.Zendesk.com./api', null],
  ['https://{{a}}.{{b}}.zendesk.com/x', null],
  ['https://api-{{tenant}}.example.com/', null],
  ['https://x.{{region}}.example.com/', null],
  ['https://{{shop}}.myshopify.com/admin/api', null], // a private-section suffix: myshopify.com is the registrable domain
  ['https://{{x}}.acme.co.uk/', null],
  ['https://{{x}}.example.com:8443/', null],
  ['https://{{x}}.www.ck/', null], // an exception rule of the list
  // the registrable domain must be written out
  ['https://{{host}}/path', 'registrable domain'],
  ['https://{{host}}.com/', 'registrable domain'],
  ['https://{{x}}.co.uk/', 'registrable domain'],
  ['https://{{x}}.kawasaki.jp/', 'registrable domain'], // wildcard rule *.kawasaki.jp
  ['https://{{x}}.foo.ck/', 'registrable domain'], // wildcard rule *.ck
  ['https://api.{{tenant}}.com/x', 'registrable domain'],
  ['https://example.{{tld}}/', 'registrable domain'],
  // never the port, the scheme or an IP address
  ['https://example.com:{{port}}/x', 'port'],
  ['{{scheme}}://example.com/', 'scheme'],
  ['http{{s}}://example.com/', 'scheme'],
  ['https://{{a}}.0.0.1/', 'IP address'],
  ['https://10.{{b}}.0.1/', 'IP address'],
  ['https://{{a}}.0x7f/', 'IP address'],
  ['https://[::{{x}}]/', 'IP address'],
  ['https://[{{x}}]/', 'IP address'],
  ['https://{{u}}@example.com/', 'credentials'],
  // the address checks still apply
  ['https://{{x}}.localhost/', 'internal by convention'],
  ['https://{{x}}.svc.cluster.local/', 'internal by convention'],
  ['https://{{x}}.internal/', 'internal by convention'],
  ['http://127.0.0.1/{{path}}', 'loopback'],
  ['http://[::1]/{{path}}', 'loopback'],
  // not a placeholder: text
  ['https://example.com/{{a b}}', 'whitespace'],
  ['https://\u0001.example.com/', 'control characters'],
  ['https://{{x}}\u0001.example.com/', 'control characters'],
];

describe('outbound URL policy: placeholders', () => {
  it.each(PLACEHOLDER_CASES)('%s', (url, expected) => {
    const problem = outboundUrlProblem(url, TOOL);
    if (expected === null) expect(problem).toBeNull();
    else expect(problem).toContain(expected);
  });

  it('blanks inside the braces are the same placeholder', () => {
    expect(outboundUrlProblem('https://{{ sub }}.example.com/{{ q }}', TOOL)).toBeNull();
    expect(outboundUrlProblem('https://{{ host }}/', TOOL)).toContain('registrable domain');
  });

  it('without placeholders allowed (sources), braces are text and the checks see them as such', () => {
    expect(outboundUrlProblem('https://example.com/{{id}}')).toBeNull();
    expect(outboundUrlProblem('https://{{x}}.localhost/')).toContain('internal by convention');
    expect(outboundUrlProblem('https://{{x}}/')).toContain('single-label');
  });
});

describe('publicSuffixLength (ICANN section of the Public Suffix List)', () => {
  it.each([
    ['example.com', 1],
    ['a.b.example.co.uk', 2],
    ['x.myshopify.com', 1],
    ['x.y.ck', 2],
    ['x.www.ck', 1],
    ['a.city.kawasaki.jp', 2],
    ['a.b.kawasaki.jp', 3],
    ['unknown-tld', 1],
  ] as const)('%s → %d', (host, length) => {
    expect(publicSuffixLength(host.split('.'))).toBe(length);
  });
});

describe('isPublicIpAddress (for the executor, after resolution)', () => {
  it.each([
    ['93.184.216.34', true],
    ['2606:4700:4700::1111', true],
    ['[2606:4700:4700::1111]', true],
    ['172.15.255.255', true],
    ['10.255.255.255', false],
    ['::ffff:192.168.0.1', false],
    ['64:ff9b::808:808', false],
    ['fe80::1%eth0', false],
    ['not an address', false],
  ] as const)('%s → %s', (address, expected) => {
    expect(isPublicIpAddress(address)).toBe(expected);
  });
});

describe('parseIpv6', () => {
  it('parses compressed, full and dotted-tail forms', () => {
    expect(parseIpv6('::1')).toEqual([...Array(15).fill(0), 1]);
    expect(parseIpv6('[::ffff:1.2.3.4]')?.slice(10)).toEqual([0xff, 0xff, 1, 2, 3, 4]);
    expect(parseIpv6('1:2:3:4:5:6:7:8')?.[15]).toBe(8);
    expect(parseIpv6('1::2::3')).toBeNull();
    expect(parseIpv6('1:2:3:4:5:6:7:8:9')).toBeNull();
    expect(parseIpv6('fe80::1%eth0')).toBeNull();
    expect(parseIpv6('1.2.3.4')).toBeNull();
  });
});
