import { isPublicIpAddress, outboundUrlProblem, parseIpv6 } from './url-policy';

describe('outbound URL policy: accepted', () => {
  it.each([
    'https://api.example.com/v1/items',
    'http://example.com',
    'https://example.com:8443/path?q=1#frag',
    'https://8.8.8.8/dns',
    'https://[2606:4700:4700::1111]/',
    'https://sub.domain.example.org./x',
    'https://127.0.0.1.nip.io/', // a name: resolved (and judged) only at execution time
  ])('%s', (url) => {
    expect(outboundUrlProblem(url)).toBeNull();
  });

  it('accepts placeholders in path and query when allowed', () => {
    expect(outboundUrlProblem('https://api.example.com/tickets/{{id}}?expand={{expand}}', { allowPlaceholders: true })).toBeNull();
  });
});

describe('outbound URL policy: not absolute http(s)', () => {
  it.each(['', '/relative/path', 'example.com/path', 'ftp://example.com/', 'file:///etc/passwd', 'javascript:alert(1)', 'gopher://x', 'http//x', 'http://'])(
    '%j',
    (url) => {
      expect(outboundUrlProblem(url)).not.toBeNull();
    },
  );

  it('rejects whitespace, control characters, backslashes and user info', () => {
    expect(outboundUrlProblem(' https://example.com')).not.toBeNull();
    expect(outboundUrlProblem('https://exa mple.com')).not.toBeNull();
    expect(outboundUrlProblem('https://example.com\\@127.0.0.1/')).not.toBeNull();
    expect(outboundUrlProblem('https://user:pass@example.com/')).toMatch(/credentials/);
    expect(outboundUrlProblem('https://' + 'a'.repeat(2100) + '.com')).toMatch(/at most/);
  });

  it('rejects placeholders in the host, and anywhere when not allowed', () => {
    expect(outboundUrlProblem('https://{{host}}/x', { allowPlaceholders: true })).toMatch(/host/);
    expect(outboundUrlProblem('https://api.{{tenant}}.com/x', { allowPlaceholders: true })).toMatch(/host/);
    expect(outboundUrlProblem('https://example.com:{{port}}/x', { allowPlaceholders: true })).toMatch(/host/);
    expect(outboundUrlProblem('https://example.com/{{id}}')).not.toBeNull();
  });
});

describe('outbound URL policy: internal addresses written as literals', () => {
  it.each([
    // loopback
    'http://127.0.0.1/',
    'http://127.10.20.30:8080/',
    'http://localhost/',
    'http://LOCALHOST./',
    'http://api.localhost/',
    'http://[::1]/',
    // unspecified
    'http://0.0.0.0/',
    'http://0/',
    'http://[::]/',
    // link-local and metadata
    'http://169.254.169.254/latest/meta-data/',
    'http://169.254.1.1/',
    'http://[fe80::1]/',
    'http://[febf::1]/',
    'http://metadata.google.internal/computeMetadata/v1/',
    'http://metadata/',
    'http://[fd00:ec2::254]/',
    'http://100.100.100.200/',
    // private ranges
    'http://10.0.0.1/',
    'http://172.16.0.1/',
    'http://172.31.255.255/',
    'http://192.168.1.1/',
    'http://[fc00::1]/',
    'http://[fd12:3456::1]/',
    // odd spellings of IPv4
    'http://2130706433/',
    'http://0x7f000001/',
    'http://0x7f.1/',
    'http://0177.0.0.1/',
    'http://127.1/',
    'http://017700000001/',
    'http://0xa9fea9fe/',
    // IPv4 inside IPv6
    'http://[::ffff:127.0.0.1]/',
    'http://[::ffff:7f00:1]/',
    'http://[::ffff:169.254.169.254]/',
    'http://[::ffff:10.0.0.1]/',
    'http://[::127.0.0.1]/',
    'http://[64:ff9b::a9fe:a9fe]/',
    'http://[2002:7f00:1::]/',
    // multicast, broadcast, reserved
    'http://224.0.0.1/',
    'http://255.255.255.255/',
    'http://[ff02::1]/',
  ])('%s', (url) => {
    expect(outboundUrlProblem(url)).not.toBeNull();
  });

  it('does not repeat the URL in its problem text', () => {
    const problem = outboundUrlProblem('http://10.1.2.3/secret-path');
    expect(problem).not.toContain('10.1.2.3');
    expect(problem).not.toContain('secret-path');
  });
});

describe('isPublicIpAddress (for the executor, after resolution)', () => {
  it('judges resolved addresses', () => {
    expect(isPublicIpAddress('93.184.216.34')).toBe(true);
    expect(isPublicIpAddress('2606:4700:4700::1111')).toBe(true);
    expect(isPublicIpAddress('172.15.255.255')).toBe(true);
    expect(isPublicIpAddress('172.32.0.0')).toBe(true);
    expect(isPublicIpAddress('10.255.255.255')).toBe(false);
    expect(isPublicIpAddress('::ffff:192.168.0.1')).toBe(false);
    expect(isPublicIpAddress('not an address')).toBe(false);
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
  });
});
