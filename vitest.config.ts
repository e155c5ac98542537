import { defineConfig } from "vitest/config";

// Real-model tests share one loaded model per worker file; keep workers few on 2 cores.
export default defineConfig({
  test: {
    include: ["src/**/*.test.ts", "src/**/*.test.tsx", "test/**/*.test.ts", "test/**/*.test.tsx"],
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 120_000,
    hookTimeout: 180_000,
  },
});
