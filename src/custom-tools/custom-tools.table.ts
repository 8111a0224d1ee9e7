import { boolean, index, jsonb, pgTable, text, uniqueIndex } from 'drizzle-orm/pg-core';
import { createdAt, orgId, updatedAt } from '../database/orgs.table';

export interface CustomToolParamRow {
  name: string;
  type: 'string' | 'number' | 'boolean' | 'integer';
  description?: string;
  required: boolean;
  in: 'query' | 'header' | 'body';
  headerName?: string;
}

export interface CustomToolGroupRow {
  name: string;
  icon: string | null;
  color: string | null;
}

export const customTools = pgTable(
  'custom_tools',
  {
    id: text('id').primaryKey(),
    orgId: orgId(),
    name: text('name').notNull(),
    label: text('label').notNull(),
    description: text('description').notNull(),
    type: text('type').notNull().default('read'),
    method: text('method').notNull(),
    url: text('url').notNull(),
    headers: jsonb('headers').$type<Record<string, string>>().notNull().default({}),
    bodyTemplate: text('body_template'),
    parameters: jsonb('parameters').$type<CustomToolParamRow[]>().notNull().default([]),
    responseMapping: text('response_mapping'),
    authType: text('auth_type').notNull().default('none'),
    authHeaderName: text('auth_header_name'),
    /** AES-256-GCM envelope of the credentials object; never returned */
    credentialsCiphertext: text('credentials_ciphertext'),
    group: jsonb('group').$type<CustomToolGroupRow | null>(),
    isActive: boolean('is_active').notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index('custom_tools_org_idx').on(t.orgId, t.id), uniqueIndex('custom_tools_org_name_unique').on(t.orgId, t.name)],
);
