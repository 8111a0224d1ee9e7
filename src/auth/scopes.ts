/** Every scope of the contract's table. There is no super-scope. */
export const SCOPES = [
  'agents:read',
  'agents:write',
  'agents:delete',
  'conversations:read',
  'connectors:read',
  'custom_tools:read',
  'custom_tools:write',
  'custom_tools:delete',
  'sources:read',
  'sources:write',
  'sources:delete',
  'chatbots:read',
  'triggers:read',
  'team:read',
  'analytics:read',
  'org:read',
] as const;

export type Scope = (typeof SCOPES)[number];

export function isScope(value: string): value is Scope {
  return (SCOPES as readonly string[]).includes(value);
}

export const API_KEY_PREFIX = 'svc_live_';
