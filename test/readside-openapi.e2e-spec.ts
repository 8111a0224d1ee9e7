import { createTestApp, type TestApp } from './support/test-app';

interface Operation {
  operationId: string;
  parameters?: Array<{ name: string; in: string; style?: string; schema?: Record<string, unknown> }>;
  responses: Record<string, { content?: { 'application/json': { schema: Record<string, unknown> } } }>;
}

describe('OpenAPI description of the read side', () => {
  let t: TestApp;
  let doc: { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }> } };
  beforeAll(async () => {
    t = await createTestApp();
    doc = (await t.http.get('/api/v1/openapi.json')).body;
  });
  afterAll(() => t.close());

  it('lists every query parameter of GET /conversations, metadata as a deepObject', () => {
    const op = doc.paths['/conversations'].get;
    const names = (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name).sort();
    expect(names).toEqual(
      [
        'cursor',
        'limit',
        'agent_id',
        'source',
        'model',
        'parent_conversation_id',
        'conversation_number',
        'since',
        'created_after',
        'created_before',
        'last_message_after',
        'last_message_before',
        'ticket_id',
        'metadata',
        'q',
        'is_simulation',
        'is_onboarding',
      ].sort(),
    );
    expect(op.parameters!.find((p) => p.name === 'metadata')).toMatchObject({ style: 'deepObject' });
  });

  it('documents the read-side operations with their response schemas', () => {
    const expected: Array<[string, string, string]> = [
      ['/conversations', 'listConversations', 'ConversationSummaryDto'],
      ['/conversations/{id}', 'getConversation', 'ConversationDetailDto'],
      ['/conversations/{id}/messages', 'listConversationMessages', 'MessageDto'],
      ['/connectors', 'listConnectors', 'ConnectorSummaryDto'],
      ['/connectors/{id}', 'getConnector', 'ConnectorDetailDto'],
      ['/triggers', 'listTriggers', 'TriggerDto'],
      ['/triggers/{id}', 'getTrigger', 'TriggerDto'],
      ['/chatbots', 'listChatbots', 'ChatbotDto'],
      ['/chatbots/{id}', 'getChatbot', 'ChatbotDto'],
      ['/analytics/agents/{agent_id}', 'getAgentAnalytics', 'AgentAnalyticsDto'],
    ];
    for (const [path, operationId, schema] of expected) {
      const op = doc.paths[path]?.get;
      expect(op?.operationId).toBe(operationId);
      expect(JSON.stringify(op.responses['200'])).toContain(`#/components/schemas/${schema}`);
    }
    expect(doc.components.schemas.ConversationSummaryDto.required!.sort()).toEqual(
      ['id', 'source', 'autonomous', 'is_onboarding', 'is_simulation', 'credits_used'].sort(),
    );
    expect(Object.keys(doc.components.schemas.AgentAnalyticsDto.properties).sort()).toEqual(['agent_id', 'daily', 'totals', 'window']);
    expect(JSON.stringify(doc.paths['/analytics/agents/{agent_id}'].get.responses['200'])).toContain('ListResponseMeta');
  });
});
