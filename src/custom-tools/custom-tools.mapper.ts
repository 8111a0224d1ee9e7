import type { customTools } from './custom-tools.table';
import { iso } from '../common/iso';
import type { CustomToolDto, CustomToolParamDto } from './custom-tools.dto';

export type CustomToolRow = typeof customTools.$inferSelect;

/**
 * Whitelisted response: the credentials ciphertext and org_id
 * are never copied, so they cannot leak through a new field by accident.
 */
export function mapCustomTool(row: CustomToolRow): CustomToolDto {
  return {
    id: row.id,
    name: row.name,
    label: row.label,
    description: row.description,
    type: row.type,
    method: row.method,
    url: row.url,
    headers: { ...row.headers },
    body_template: row.bodyTemplate,
    parameters: row.parameters.map((param) => {
      const dto: CustomToolParamDto = { name: param.name, type: param.type, required: param.required, in: param.in };
      if (param.description !== undefined) dto.description = param.description;
      if (param.headerName !== undefined) dto.headerName = param.headerName;
      return dto;
    }),
    response_mapping: row.responseMapping,
    auth: { type: row.authType, header_name: row.authType === 'api_key' ? row.authHeaderName : null },
    group: row.group ? { name: row.group.name, icon: row.group.icon ?? null, color: row.group.color ?? null } : null,
    is_active: row.isActive,
    created_at: iso(row.createdAt),
    updated_at: iso(row.updatedAt),
  };
}
