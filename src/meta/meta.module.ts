import { Module } from '@nestjs/common';
import { MetaController, OpenApiDocumentHolder } from './meta.controller';

@Module({
  controllers: [MetaController],
  providers: [OpenApiDocumentHolder],
  exports: [OpenApiDocumentHolder],
})
export class MetaModule {}
