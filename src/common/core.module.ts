import { Global, Module, type DynamicModule } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { LOGGER, type AppLogger } from './logger';
import { Paginator } from './pagination';
import { ScheduledJobs } from './scheduled-jobs';

/** Configuration, logger and the shared helpers every module may inject. */
@Global()
@Module({})
export class CoreModule {
  static forRoot(config: AppConfig, logger: AppLogger): DynamicModule {
    return {
      module: CoreModule,
      providers: [{ provide: APP_CONFIG, useValue: config }, { provide: LOGGER, useValue: logger }, Paginator, ScheduledJobs],
      exports: [APP_CONFIG, LOGGER, Paginator, ScheduledJobs],
    };
  }
}
