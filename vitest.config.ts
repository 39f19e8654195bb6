import { defineConfig } from 'vitest/config';

// One project per package: each package's tests run against its TypeScript sources through the
// "source" export condition, so a test never depends on a stale dist/.
export default defineConfig({
  test: {
    projects: ['packages/*'],
  },
});
