import { firstFreeToolName, resolveAuth, substituteForValidation, toolNameBase } from './custom-tools.rules';

describe('toolNameBase', () => {
  it('is custom_ plus a lower snake_case slug of the label', () => {
    expect(toolNameBase('Zendesk Get Ticket')).toBe('custom_zendesk_get_ticket');
    expect(toolNameBase('  --Weird__Label!!  ')).toBe('custom_weird_label');
    expect(toolNameBase('Ça Marche')).toBe('custom_ca_marche');
    expect(toolNameBase('!!!')).toBe('custom_tool');
    expect(toolNameBase('a'.repeat(100)).length).toBe('custom_'.length + 48);
  });
});

describe('firstFreeToolName', () => {
  it('appends the first free numeric suffix', () => {
    expect(firstFreeToolName('custom_x', [])).toBe('custom_x');
    expect(firstFreeToolName('custom_x', ['custom_x'])).toBe('custom_x_2');
    expect(firstFreeToolName('custom_x', ['custom_x', 'custom_x_2', 'custom_x_4'])).toBe('custom_x_3');
  });
});

describe('body_template substitution for validation', () => {
  it('replaces placeholders inside strings with text and bare ones with null', () => {
    expect(substituteForValidation('{"a": "hi {{name}}", "b": {{count}}}')).toBe('{"a": "hi x", "b": null}');
    expect(substituteForValidation('{"a": "quote \\" {{n}}", "b": {{ n }}}')).toBe('{"a": "quote \\" x", "b": null}');
    // {{}} and {{a b}} name nothing a parameter can be called: plain text
    expect(substituteForValidation('[{{a}}, {{ b }}, {{}}, {{a b}}, {{user.id}}, {{order-id}}]')).toBe('[null, null, {{}}, {{a b}}, null, null]');
    expect(substituteForValidation('{"a": {{a b}}}')).toBe('{"a": {{a b}}}');
  });
});

describe('resolveAuth', () => {
  it('keeps credentials when the type is unchanged and none are sent', () => {
    expect(resolveAuth({ type: 'bearer' }, { type: 'bearer', headerName: null })).toEqual({ ok: true, value: { kind: 'unchanged' } });
    expect(resolveAuth(undefined, { type: 'bearer', headerName: null })).toEqual({ ok: true, value: { kind: 'unchanged' } });
  });

  it('takes auth without credentials; a new type without them drops the stored ones', () => {
    expect(resolveAuth({ type: 'bearer' }, null)).toEqual({ ok: true, value: { kind: 'set', type: 'bearer', headerName: null, credentials: null } });
    expect(resolveAuth({ type: 'api_key' }, null)).toEqual({ ok: true, value: { kind: 'set', type: 'api_key', headerName: 'X-API-Key', credentials: null } });
    expect(resolveAuth({ type: 'basic' }, { type: 'bearer', headerName: null })).toEqual({ ok: true, value: { kind: 'set', type: 'basic', headerName: null, credentials: null } });
  });

  it('stores only the fields the type uses, and only those given', () => {
    const all = { token: 't', apiKey: 'k', username: 'u', password: 'p', header_name: 'X-H' };
    expect(resolveAuth({ type: 'none', credentials: all }, null)).toMatchObject({ value: { credentials: null, headerName: null } });
    expect(resolveAuth({ type: 'bearer', credentials: all }, null)).toMatchObject({ value: { credentials: { token: 't' }, headerName: null } });
    expect(resolveAuth({ type: 'api_key', credentials: all }, null)).toMatchObject({ value: { credentials: { apiKey: 'k' }, headerName: 'X-H' } });
    expect(resolveAuth({ type: 'basic', credentials: all }, null)).toMatchObject({ value: { credentials: { username: 'u', password: 'p' } } });
    expect(resolveAuth({ type: 'basic', credentials: { username: 'u' } }, { type: 'basic', headerName: null })).toMatchObject({ value: { credentials: { username: 'u' } } });
    expect(resolveAuth({ type: 'bearer', credentials: {} }, { type: 'bearer', headerName: null })).toMatchObject({ value: { kind: 'set', credentials: null } });
  });

  it('never quotes a secret in a problem', () => {
    const secret = 'super-secret-value';
    const result = resolveAuth({ type: 'none', credentials: { token: secret } }, null);
    expect(JSON.stringify(result)).not.toContain(secret);
    const other = resolveAuth({ type: 'api_key', credentials: { apiKey: secret, header_name: 'bad header' } }, null);
    expect(other).toMatchObject({ ok: false, fields: { 'auth.credentials.header_name': [expect.any(String)] } });
    expect(JSON.stringify(other)).not.toContain(secret);
  });
});
