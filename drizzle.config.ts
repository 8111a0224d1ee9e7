import { defineConfig } from 'drizzle-kit';

// Migrations are generated from src/database/schema.ts (`npm run db:generate`)
// and committed; the service applies them at start-up.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/database/schema.ts',
  out: './src/database/migrations',
});
