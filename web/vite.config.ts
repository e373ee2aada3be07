import { defineConfig } from 'vite';

/**
 * The dashboard is built to static files that Slipway serves at / (src/http/plugins/dashboard.ts): hashed assets under
 * /assets/, no inline script (the Content-Security-Policy forbids it). `npm run dev -w web` proxies the API to a
 * Slipway on :8000.
 */
export default defineConfig({
  build: {
    outDir: 'dist',
    assetsDir: 'assets',
    sourcemap: false,
    rolldownOptions: {
      // TanStack Query marks its hooks "use client" for React Server Components, which a plain SPA has none of.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
  server: {
    proxy: {
      '/v1': { target: 'http://127.0.0.1:8000', ws: true, changeOrigin: false },
      '/status': 'http://127.0.0.1:8000',
    },
  },
});
