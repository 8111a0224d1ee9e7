import { Injectable } from '@nestjs/common';
import { newId } from '../../libs/ids/ids';
import { ApiError } from '../common/api-error';
import type { OrgCredits, OrgLimits, OrgTrial } from '../database/orgs.table';
import { ORG_STATUSES, type OrgDto } from './orgs.dto';
import { mapOrg } from './orgs.mapper';
import { OrgsRepository } from './orgs.repository';

export interface OrgInput {
  id?: string;
  name: string;
  slug?: string;
  plan?: string;
  status?: string;
  credits?: Partial<OrgCredits>;
  limits?: Partial<OrgLimits>;
  trial?: OrgTrial | null;
  createdAt?: Date;
}

const DEFAULT_LIMITS: OrgLimits = {
  agents: null,
  connectors: null,
  sources: null,
  chatbots: null,
  scheduled_triggers: null,
  custom_tool_slots: null,
};

export function slugify(name: string): string {
  return (
    name
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 60) || 'org'
  );
}

@Injectable()
export class OrgsService {
  constructor(private readonly repository: OrgsRepository) {}

  async getOrg(orgId: string): Promise<OrgDto> {
    const row = await this.repository.findById(orgId);
    // the key's organization always exists (foreign key); a race with deletion reads as not found
    if (!row) throw ApiError.notFound('Organization');
    return mapOrg(row);
  }

  /** Creates or updates an organization and its upload source singleton. */
  async upsertOrg(input: OrgInput): Promise<string> {
    const id = input.id ?? newId('org', input.createdAt);
    if (input.status !== undefined && !(ORG_STATUSES as readonly string[]).includes(input.status)) {
      throw ApiError.field('status', `must be one of ${ORG_STATUSES.join(', ')}`);
    }
    const total = input.credits?.total ?? 0;
    const used = input.credits?.used ?? 0;
    await this.repository.upsert(
      {
        id,
        name: input.name,
        slug: input.slug ?? slugify(input.name),
        plan: input.plan ?? 'free',
        status: input.status ?? 'active',
        credits: {
          total,
          used,
          remaining: input.credits?.remaining ?? Math.max(total - used, 0),
          top_up: input.credits?.top_up ?? 0,
          reset_at: input.credits?.reset_at ?? null,
        },
        limits: { ...DEFAULT_LIMITS, ...input.limits },
        trial: input.trial ?? null,
        ...(input.createdAt ? { createdAt: input.createdAt } : {}),
      },
    );
    await this.repository.ensureUploadSource(id);
    return id;
  }

  /** The organization with this slug, if any (slugs are unique). */
  findIdBySlug(slug: string): Promise<string | null> {
    return this.repository.findIdBySlug(slug);
  }

  anyOrgExists(): Promise<boolean> {
    return this.repository.anyExists();
  }

  findRow(orgId: string) {
    return this.repository.findById(orgId);
  }
}
