import { defineConfig } from 'drizzle-kit';

// Each table lives in the folder of the module that owns it (`*.table.ts`);
// migrations are generated from them all (`npm run db:generate`) and
// committed; the service applies them at start-up.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/**/*.table.ts',
  out: './src/database/migrations',
});
