import { Global, Inject, Module, OnApplicationShutdown, type DynamicModule } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config/config';
import { LOGGER, type AppLogger } from '../common/logger';
import { DatabaseConnection } from './connection';

class DatabaseLifecycle implements OnApplicationShutdown {
  constructor(@Inject(DatabaseConnection) private readonly connection: DatabaseConnection) {}

  async onApplicationShutdown(): Promise<void> {
    await this.connection.close();
  }
}

/**
 * The open database (`DatabaseConnection`), whichever the engine. Migrations
 * are applied when the connection opens. Tests hand in an already-open
 * connection (a copy of a migrated template). Repositories reach the
 * database through `TransactionHost` (src/database/transactions.ts), never
 * the root database directly: there is no token for it.
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
        DatabaseLifecycle,
      ],
      exports: [DatabaseConnection],
    };
  }
}
