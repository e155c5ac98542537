import { defineConfig } from "vitest/config";

// Real-model tests share one loaded model per worker file; keep workers few on 2 cores. The agent tests (a real
// agent's multi-minute task on a real model) run after everything else, alone, so neither slows the other.
export default defineConfig({
  test: {
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 120_000,
    hookTimeout: 180_000,
    projects: [
      {
        extends: true,
        test: {
          name: "kiln",
          include: ["src/**/*.test.ts", "src/**/*.test.tsx", "test/**/*.test.ts", "test/**/*.test.tsx"],
          exclude: ["test/agents/**"],
          sequence: { groupOrder: 0 },
        },
      },
      { extends: true, test: { name: "agents", include: ["test/agents/**/*.test.ts"], sequence: { groupOrder: 1 } } },
    ],
  },
});
