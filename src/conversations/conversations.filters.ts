import { Injectable, type PipeTransform } from '@nestjs/common';
import { plainToInstance } from 'class-transformer';
import { validateSync } from 'class-validator';
import { parseId } from '../../libs/ids/ids';
import { ApiError, type FieldErrors } from '../common/api-error';
import { addFieldError, hasFieldErrors, mergeFieldErrors } from '../common/field-errors';
import { BOUNDS } from '../common/input-bounds';
import { flattenValidationErrors, QUERY_VALIDATOR_OPTIONS } from '../common/validation';
import { ConversationListQuery, type ConversationSource } from './conversations.dto';

/**
 * Normalized filters of `GET /conversations`: what the repository applies and
 * what the cursor is bound to (cursors are filter-aware).
 */
export interface ConversationFilters {
  agentId?: string;
  source?: ConversationSource;
  model?: string;
  parentConversationId?: string;
  conversationNumber?: number;
  createdAfter?: string;
  createdBefore?: string;
  lastMessageAfter?: string;
  lastMessageBefore?: string;
  ticketId?: string;
  /** exact matches on metadata keys, AND-ed; keys sorted so equal filters hash equally */
  metadata?: Record<string, string>;
  q?: string;
  isSimulation?: boolean;
  isOnboarding?: boolean;
}

export interface ConversationListRequest {
  cursor?: string;
  limit?: number;
  filters: ConversationFilters;
}

const METADATA_KEY = /^metadata\[(.*)\]$/s;
const MAX_METADATA_KEYS = BOUNDS.metadataKeys;

/**
 * The one place the conversation list query is validated. The app's query
 * parser (`parseQueryString`) hands `metadata[ticketId]=x` over as a flat key, so the named
 * params go through class-validator with the options of every query (unknown
 * params are ignored, docs/decisions.md) and the bracket keys
 * are checked here: no `$` prefix, no dot, no empty key, one string value.
 */
@Injectable()
export class ConversationListQueryPipe implements PipeTransform<unknown, ConversationListRequest> {
  transform(raw: unknown): ConversationListRequest {
    const query = (raw ?? {}) as Record<string, unknown>;
    const named: Record<string, unknown> = {};
    // a Map, not an object: `metadata[__proto__]=1` set on `{}` would change its prototype and the filter would vanish
    const metadata = new Map<string, string>();
    const fields: FieldErrors = {};
    for (const [param, value] of Object.entries(query)) {
      const match = METADATA_KEY.exec(param);
      if (!match) {
        // `metadata[ticketId=5` is a metadata filter mistyped, not an unknown parameter: ignoring it would widen the list
        if (param.startsWith('metadata[')) addFieldError(fields, param, 'is not a well-formed metadata[KEY] filter: the key must end with ]');
        else named[param] = value;
        continue;
      }
      const key = match[1];
      const problem =
        key === ''
          ? 'the metadata key must not be empty'
          : key.startsWith('$')
            ? 'metadata keys must not start with $'
            : key.includes('.')
              ? 'metadata keys must not contain a dot'
              : /[[\]]/.test(key)
                ? 'metadata keys must not be nested'
                : key.length > BOUNDS.metadataKey
                  ? `metadata keys must be at most ${BOUNDS.metadataKey} characters`
                  : typeof value !== 'string'
                    ? 'must be given once, as a string'
                    : value.length > BOUNDS.metadataValue
                      ? `must be at most ${BOUNDS.metadataValue} characters`
                      : null;
      if (problem) addFieldError(fields, param, problem);
      else metadata.set(key, value as string);
    }
    if (metadata.size > MAX_METADATA_KEYS) addFieldError(fields, 'metadata', `at most ${MAX_METADATA_KEYS} metadata keys`);

    const dto = plainToInstance(ConversationListQuery, named);
    const errors = validateSync(dto, QUERY_VALIDATOR_OPTIONS);
    mergeFieldErrors(fields, flattenValidationErrors(errors));
    const agentId = dto.agent_id === undefined ? undefined : parseId('agent', dto.agent_id, { allowBare: true });
    if (agentId === null) addFieldError(fields, 'agent_id', 'must be agent_<24 hex> or a bare 24-hex id');
    const parentId = dto.parent_conversation_id === undefined ? undefined : parseId('conversation', dto.parent_conversation_id, { allowBare: true });
    if (parentId === null) addFieldError(fields, 'parent_conversation_id', 'must be conv_<24 hex> or a bare 24-hex id');
    if (hasFieldErrors(fields)) throw ApiError.validation(fields);

    // Object.fromEntries defines own properties, `__proto__` and `constructor` included
    const sortedMetadata = metadata.size ? Object.fromEntries([...metadata].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : undefined;
    const filters: ConversationFilters = {
      agentId: agentId ?? undefined,
      source: dto.source,
      model: dto.model,
      parentConversationId: parentId ?? undefined,
      conversationNumber: dto.conversation_number,
      createdAfter: dto.created_after?.toISOString(),
      createdBefore: dto.created_before?.toISOString(),
      // `since` is an alias of `last_message_after`; with both, the later bound wins (both must hold)
      lastMessageAfter: laterOf(dto.since, dto.last_message_after)?.toISOString(),
      lastMessageBefore: dto.last_message_before?.toISOString(),
      ticketId: dto.ticket_id,
      metadata: sortedMetadata,
      q: dto.q,
      isSimulation: dto.is_simulation,
      isOnboarding: dto.is_onboarding,
    };
    for (const key of Object.keys(filters) as Array<keyof ConversationFilters>) {
      if (filters[key] === undefined) delete filters[key];
    }
    return { cursor: dto.cursor, limit: dto.limit, filters };
  }
}

function laterOf(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a) return b;
  if (!b) return a;
  return a.getTime() >= b.getTime() ? a : b;
}
