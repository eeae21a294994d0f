import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

// `npm run dev` proxies the API to a running `mneme serve` (MNEME_API=http://127.0.0.1:PORT).
export default defineConfig({
  plugins: [svelte()],
  base: './',
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  server: {
    proxy: process.env.MNEME_API ? { '/api': { target: process.env.MNEME_API, changeOrigin: false } } : undefined,
  },
});
