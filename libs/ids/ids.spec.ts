import { declareIdKind, idKinds, idTimestamp, isId, newId, newObjectIdHex, parseId, smallestIdAt } from './ids';

describe('id format', () => {
  it('every shared prefix is lowercase letters only, and unique', () => {
    const problems = [...idKinds()].flatMap(([kind, prefix]) => [
      ...(/^[a-z]+$/.test(prefix) ? [] : [`${kind}: '${prefix}' must be lowercase letters a-z only (an id is <prefix>_<24 hex>, split at its first "_")`]),
      ...([...idKinds().values()].filter((other) => other === prefix).length > 1 ? [`${kind}: '${prefix}' is used by another kind`] : []),
    ]);
    expect(problems).toEqual([]);
  });

  it("a module's kind is refused a prefix another kind has, or one that is not lowercase letters", () => {
    // kinds no module declares: the casts stand for a module's IdPrefixes augmentation
    expect(() => declareIdKind('widget' as never, 'conv' as never)).toThrow("id kind widget: prefix 'conv' is already id kind conversation's");
    expect(() => declareIdKind('widget' as never, 'wid_get' as never)).toThrow('must be lowercase letters a-z only');
    expect(() => declareIdKind('agent', 'agnt' as never)).toThrow("id kind agent is declared twice, as 'agent' and 'agnt'");
    expect(newId(declareIdKind('gadget' as never, 'gadget' as never))).toMatch(/^gadget_[a-f0-9]{24}$/);
    expect(() => newId('gizmo' as never)).toThrow('id kind gizmo is not declared');
  });

  it('generates <prefix>_<24 lowercase hex>', () => {
    expect(newId('agent')).toMatch(/^agent_[a-f0-9]{24}$/);
    expect(newId('conversation')).toMatch(/^conv_[a-f0-9]{24}$/);
    expect(newId('customTool')).toMatch(/^tool_[a-f0-9]{24}$/);
  });

  it('orders by creation: later ids sort after earlier ones', () => {
    const ids = Array.from({ length: 500 }, () => newObjectIdHex());
    expect([...ids].sort()).toEqual(ids);
    const older = newObjectIdHex(new Date('2020-01-01T00:00:00Z'));
    expect(older < newObjectIdHex()).toBe(true);
  });

  it('puts the seconds timestamp first', () => {
    const at = new Date('2024-05-06T07:08:09Z');
    expect(idTimestamp(newId('agent', at)).toISOString()).toBe('2024-05-06T07:08:09.000Z');
  });

  it('never repeats within a process', () => {
    const ids = new Set(Array.from({ length: 10000 }, () => newObjectIdHex()));
    expect(ids.size).toBe(10000);
  });
});

describe('parseId', () => {
  const hex = '0123456789abcdef01234567';

  it('accepts the prefixed form', () => {
    expect(parseId('agent', `agent_${hex}`)).toBe(`agent_${hex}`);
  });

  it('accepts the bare form only where allowed', () => {
    expect(parseId('agent', hex, { allowBare: true })).toBe(`agent_${hex}`);
    expect(parseId('customTool', hex)).toBeNull();
  });

  it.each([
    ['wrong prefix', `conv_${hex}`],
    ['uppercase hex', `agent_${hex.toUpperCase()}`],
    ['too short', 'agent_0123'],
    ['too long', `agent_${hex}0`],
    ['empty', ''],
    ['injection', `agent_${hex}' or 1=1`],
  ])('rejects %s', (_name, value) => {
    expect(parseId('agent', value, { allowBare: true })).toBeNull();
  });

  it('rejects non-strings', () => {
    expect(parseId('agent', 42)).toBeNull();
    expect(isId('agent', undefined)).toBe(false);
  });
});

describe('smallestIdAt', () => {
  it('sorts below every id of its second and above every id of the second before', () => {
    const at = new Date('2024-05-06T07:08:09Z');
    const seconds = at.getTime() / 1000;
    const bound = smallestIdAt('conversation', seconds);
    expect(bound).toBe(`conv_${seconds.toString(16)}0000000000000000`);
    expect(idTimestamp(bound).toISOString()).toBe(at.toISOString());
    expect(bound <= newId('conversation', at)).toBe(true);
    expect(newId('conversation', new Date(at.getTime() - 1000)) < bound).toBe(true);
  });

  it('refuses seconds outside the 32-bit timestamp', () => {
    expect(() => smallestIdAt('agent', -1)).toThrow(RangeError);
    expect(() => smallestIdAt('agent', 0x100000000)).toThrow(RangeError);
  });
});
