// The console's web build: web/ → services/console/dist, served by src/app.ts. `pnpm --filter @ftp/console dev`
// serves it with live reload and forwards /api to a running console (the embedded stack, CONSOLE_PORT 8080).
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  oxc: { jsx: { runtime: 'automatic' } },
  build: {
    outDir: fileURLToPath(new URL('../dist', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
    // React, Mantine and uPlot make one chunk of ~680 kB (~210 kB compressed), served by the console and cached for good.
    chunkSizeWarningLimit: 1000,
    rolldownOptions: {
      // Mantine marks its modules "use client" (for React Server Components); a client bundle has no use for it.
      onwarn(warning, warn) {
        if (warning.code !== 'MODULE_LEVEL_DIRECTIVE') warn(warning);
      },
    },
  },
  server: { proxy: { '/api': process.env.CONSOLE_URL ?? 'http://127.0.0.1:8080' } },
});
