import { parseQueryString } from '../common/request-context';
import { ApiError } from '../common/api-error';
import { ConversationListQueryPipe } from './conversations.filters';

describe('ConversationListQueryPipe', () => {
  const pipe = new ConversationListQueryPipe();

  it('normalizes ids, dates, booleans and metadata into the filters the cursor is bound to', () => {
    const hex = '0123456789abcdef01234567';
    const request = pipe.transform({
      agent_id: hex,
      parent_conversation_id: `conv_${hex}`,
      'metadata[z]': '1',
      'metadata[a]': 'x',
      is_simulation: '1',
      since: '2026-03-01T02:00:00+02:00',
      limit: '10',
    });
    expect(request).toEqual({
      cursor: undefined,
      limit: 10,
      filters: {
        agentId: `agent_${hex}`,
        parentConversationId: `conv_${hex}`,
        metadata: { a: 'x', z: '1' },
        isSimulation: true,
        lastMessageAfter: '2026-03-01T00:00:00.000Z',
      },
    });
    expect(Object.keys(request.filters.metadata!)).toEqual(['a', 'z']);
  });

  it('spells the same filters the same way (1 and true, bare and prefixed ids)', () => {
    const hex = '0123456789abcdef01234567';
    expect(pipe.transform({ is_onboarding: 'true', agent_id: hex }).filters).toEqual(pipe.transform({ is_onboarding: '1', agent_id: `agent_${hex}` }).filters);
  });

  it('reads metadata filters from the flat `metadata[KEY]` params the query parser gives', () => {
    expect(parseQueryString('metadata%5BticketId%5D=7&metadata[b]=x+y')).toEqual({ 'metadata[ticketId]': '7', 'metadata[b]': 'x y' });
    expect(pipe.transform(parseQueryString('metadata[ticketId]=7')).filters).toEqual({ metadata: { ticketId: '7' } });
    // repeated: an array, refused
    expect(() => pipe.transform(parseQueryString('metadata[a]=1&metadata[a]=2'))).toThrow(ApiError);
  });

  it('names every bad parameter at once, and ignores unknown ones (docs/decisions.md)', () => {
    try {
      pipe.transform({ source: 'email', 'metadata[a.b]': '1', nope: 'x' });
      throw new Error('expected a validation error');
    } catch (error) {
      expect(error).toBeInstanceOf(ApiError);
      expect(Object.keys((error as ApiError).details!.fields!).sort()).toEqual(['metadata[a.b]', 'source']);
    }
    expect(pipe.transform({ source: 'embed', nope: 'x' }).filters).toEqual({ source: 'embed' });
  });
});
