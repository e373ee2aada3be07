import { defineConfig } from 'drizzle-kit';

// Migrations are generated from src/store/schema.ts and applied at start (src/store/db.ts).
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/store/schema.ts',
  out: './drizzle',
});
