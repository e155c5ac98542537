import type { Command } from "commander";
import { formatTable } from "../../team/text-table.js";
import { backendOption, formatFlagErrors } from "../options.js";

interface InfoFlags {
  backend?: "llama-cpp" | "webgpu";
  json?: boolean;
}

/** Registers `kiln info`: what a backend finds on this machine (for webgpu: the adapter, its tier and limits). */
export function registerInfo(program: Command): void {
  const command = program
    .command("info")
    .description("show what a backend finds on this machine: llama.cpp's GPU support, or the WebGPU adapter, tier and limits")
    .addOption(backendOption().default("llama-cpp"))
    .option("--json", "print JSON")
    .addHelpText("after", "\nExamples:\n  kiln info\n  kiln info --backend webgpu --json\n")
    .action(async (flags: InfoFlags) => {
      const facts = flags.backend === "webgpu" ? await describeWebGpu() : await describeLlamaCpp();
      process.stdout.write(`${flags.json ? JSON.stringify(facts, null, 2) : formatFacts(facts)}\n`);
    });
  formatFlagErrors(command);
}

async function describeWebGpu(): Promise<Record<string, unknown>> {
  const { openGpuDevice } = await import("../../engine/backends/webgpu/device.js");
  const device = await openGpuDevice();
  try {
    const { backend: api, ...adapter } = device.info;
    return { backend: "webgpu", api, ...adapter };
  } finally {
    device.destroy();
  }
}

async function describeLlamaCpp(): Promise<Record<string, unknown>> {
  const { describeLlamaCpp: describe } = await import("../../engine/backends/llama-cpp/describe-runtime.js");
  return { backend: "llama-cpp", ...(await describe()) };
}

/** Scalars as a two-column table; lists and objects (features, limits) one entry per line below it. */
function formatFacts(facts: Record<string, unknown>): string {
  const rows = Object.entries(facts).filter(([, value]) => typeof value !== "object").map(([key, value]) => [key, String(value)]);
  const nested = Object.entries(facts).filter(([, value]) => typeof value === "object" && value !== null);
  const sections = nested.map(([key, value]) => {
    const entries = Array.isArray(value) ? value.map((item) => `  ${String(item)}`) : Object.entries(value as object).map(([k, v]) => `  ${k}: ${String(v)}`);
    return [`${key}:`, ...entries].join("\n");
  });
  return [formatTable(["fact", "value"], rows), ...sections].join("\n\n");
}
