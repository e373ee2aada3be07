import { defineConfig } from 'drizzle-kit';

// Migrations are generated from src/store/schema/ (index.ts re-exports every table) and applied at start (src/store/db.ts).
export default defineConfig({
  dialect: 'postgresql',
  schema: './src/store/schema/index.ts',
  out: './drizzle',
});
