import { defineConfig } from 'drizzle-kit';

// `npx drizzle-kit generate` writes SQL migrations from src/db/schema; they are committed and run at start.
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/db/schema/index.ts',
  out: './src/db/migrations',
});
