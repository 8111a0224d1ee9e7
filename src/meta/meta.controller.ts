import { Controller, Get, Injectable } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiTags, type OpenAPIObject } from '@nestjs/swagger';
import { Public } from '../auth/auth.decorators';
import { ApiError, ErrorCode } from '../common/api-error';
import { RawResponse } from '../common/envelope';
import { ApiEnvelope, ApiErrors } from '../common/openapi';
import { DOCS_PATH } from '../common/api-paths';

class BannerDto {
  @ApiProperty({ example: 'Agent Platform REST API' }) name!: string;
  @ApiProperty({ example: 'v1' }) version!: string;
  @ApiProperty({ description: 'Where the interactive API reference lives (it reads `/api/v1/openapi.json`).', example: '/docs' }) docs!: string;
}

/** Holds the description document, built once at start-up from the registered routes. */
@Injectable()
export class OpenApiDocumentHolder {
  private document: OpenAPIObject | null = null;

  set(document: OpenAPIObject): void {
    this.document = document;
  }

  get(): OpenAPIObject {
    if (!this.document) throw new ApiError(ErrorCode.ServiceUnavailable, 'The API description is not ready yet.');
    return this.document;
  }
}

@ApiTags('Meta')
@Controller()
export class MetaController {
  constructor(private readonly openApi: OpenApiDocumentHolder) {}

  @Get()
  @Public()
  @ApiOperation({ operationId: 'getBanner', summary: 'Service banner' })
  @ApiEnvelope(BannerDto)
  @ApiErrors(500)
  getBanner(): BannerDto {
    return { name: 'Agent Platform REST API', version: 'v1', docs: `/${DOCS_PATH}` };
  }

  @Get('openapi.json')
  @Public()
  @RawResponse()
  @ApiOperation({ operationId: 'getOpenApiDocument', summary: 'The OpenAPI 3.1 description of this API' })
  @ApiOkResponse({ description: 'OpenAPI 3.1 document', schema: { type: 'object', additionalProperties: true } })
  @ApiErrors(500)
  getOpenApiDocument(): OpenAPIObject {
    return this.openApi.get();
  }
}
