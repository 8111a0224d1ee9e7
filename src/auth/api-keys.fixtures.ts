import { Injectable } from '@nestjs/common';
import { IsArray, IsBoolean, IsNotEmpty, IsOptional, IsString, MaxLength } from 'class-validator';
import { ApiError, ErrorCode } from '../common/api-error';
import { fixtureDate, FixtureError, RegisteredFixtureSection, type FixtureContext } from '../fixtures/fixture-registry';
import { newId } from '../../libs/ids/ids';
import { ApiKeysService, generateToken, isWellFormedToken, type ApiKeyInput } from './api-keys.service';
import { isScope, SCOPES } from './scopes';
import { IsIdOf } from '../common/input-bounds';
import { IsDateTime } from '../common/validation';

class ApiKeyFixture {
  @IsOptional() @IsIdOf('key') id?: string;
  @IsOptional() @IsString() @IsNotEmpty() @MaxLength(200) label?: string;
  @IsOptional() @IsString() token?: string;
  @IsArray() @IsString({ each: true }) scopes!: string[];
  @IsOptional() @IsDateTime() expires_at?: string | null;
  @IsOptional() @IsBoolean() revoked?: boolean;
}

@Injectable()
export class ApiKeysFixtureSection extends RegisteredFixtureSection<ApiKeyInput[]> {
  constructor(private readonly keys: ApiKeysService) {
    // the demo organization's one key is built with it (src/seed/demo-fixture.ts)
    super({ name: 'api_keys', order: 10, demoFile: null });
  }

  parse(value: unknown, path: string, ctx: FixtureContext): ApiKeyInput[] {
    return this.parseRows(ApiKeyFixture, value, path, ctx, (item, at) => {
      if (item.token !== undefined && !isWellFormedToken(item.token)) {
        throw new FixtureError(`${at}.token`, 'must be svc_live_ followed by 32 to 128 URL-safe characters');
      }
      const unknown = item.scopes.find((scope) => !isScope(scope));
      if (unknown !== undefined) throw new FixtureError(`${at}.scopes`, `unknown scope ${unknown}; valid scopes: ${SCOPES.join(', ')}`);
      if (item.scopes.length === 0) throw new FixtureError(`${at}.scopes`, 'at least one scope is required');
      const id = item.id ?? newId('key');
      const label = item.label ?? 'fixture';
      let token = item.token;
      if (!token) {
        token = generateToken();
        ctx.generatedTokens.push({ org_id: ctx.orgId, id, label, token });
      }
      return { id, orgId: ctx.orgId, label, token, scopes: item.scopes, expiresAt: fixtureDate(item.expires_at), revoked: item.revoked ?? false };
    });
  }

  async write(_orgId: string, inputs: ApiKeyInput[], ctx: FixtureContext): Promise<void> {
    for (const [index, input] of inputs.entries()) {
      try {
        await this.keys.create(input);
      } catch (error) {
        // like every section: an id of another organization fails the whole load
        if (error instanceof ApiError && error.code === ErrorCode.Conflict) throw new FixtureError(`${this.itemPath(ctx, index)}.id`, error.message);
        throw error;
      }
    }
  }
}
