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

  it('lists every query parameter of GET /conversations; metadata[KEY] in the description, where no generator can send it wrong', () => {
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
        'q',
        'is_simulation',
        'is_onboarding',
      ].sort(),
    );
    // the one parameter with a closed set of values keeps it (Swagger drops a spread query class's enums)
    const source = (op.parameters ?? []).find((p) => p.name === 'source') as { schema?: { enum?: string[] } } | undefined;
    expect(source?.schema?.enum).toEqual(['dashboard', 'autonomous', 'embed', 'sub-agent']);
    const described = op as Operation & { description?: string; 'x-query-deep-objects'?: Array<{ name: string; style: string }> };
    expect(described.description).toContain('`metadata[ticketId]=123`');
    expect(described['x-query-deep-objects']).toEqual([expect.objectContaining({ name: 'metadata', style: 'deepObject' })]);
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
      // the envelope is a named component; its data refers to the model
      const envelope = (op.responses['200'].content!['application/json'].schema.$ref as string).split('/').pop()!;
      expect(JSON.stringify(doc.components.schemas[envelope])).toContain(`#/components/schemas/${schema}`);
    }
    // every field the service always sends is required (nullable where null), the contract's six included
    expect(doc.components.schemas.ConversationSummaryDto.required!.sort()).toEqual(Object.keys(doc.components.schemas.ConversationSummaryDto.properties).sort());
    expect(Object.keys(doc.components.schemas.AgentAnalyticsDto.properties).sort()).toEqual(['agent_id', 'daily', 'totals', 'window']);
    const analytics = (doc.paths['/analytics/agents/{agent_id}'].get.responses['200'].content!['application/json'].schema.$ref as string).split('/').pop()!;
    expect(JSON.stringify(doc.components.schemas[analytics])).toContain('ListResponseMeta');
  });
});
