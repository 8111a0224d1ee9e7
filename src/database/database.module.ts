import { Global, Inject, Module, OnApplicationShutdown, type DynamicModule } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { LOGGER, type AppLogger } from '../common/logger';
import { DatabaseConnection } from './connection';
import { DATABASE } from './database.types';

class DatabaseLifecycle implements OnApplicationShutdown {
  constructor(@Inject(DatabaseConnection) private readonly connection: DatabaseConnection) {}

  async onApplicationShutdown(): Promise<void> {
    await this.connection.close();
  }
}

/**
 * One injection token for the Drizzle database (`DATABASE`), whichever the
 * engine. Migrations are applied when the connection opens. Tests hand in an
 * already-open connection (a copy of a migrated template).
 */
@Global()
@Module({})
export class DatabaseModule {
  static forRoot(connection?: DatabaseConnection): DynamicModule {
    return {
      module: DatabaseModule,
      providers: [
        connection
          ? { provide: DatabaseConnection, useValue: connection }
          : {
              provide: DatabaseConnection,
              inject: [APP_CONFIG, LOGGER],
              useFactory: async (config: AppConfig, logger: AppLogger) => {
                const opened = await DatabaseConnection.open(config, logger);
                try {
                  await opened.migrate();
                } catch (error) {
                  await opened.close();
                  throw error;
                }
                return opened;
              },
            },
        { provide: DATABASE, inject: [DatabaseConnection], useFactory: (c: DatabaseConnection) => c.db },
        DatabaseLifecycle,
      ],
      exports: [DatabaseConnection, DATABASE],
    };
  }
}
