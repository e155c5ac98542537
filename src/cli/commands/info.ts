import type { Command } from "commander";
import { formatTable } from "../../team/text-table.js";
import { backendOption, formatFlagErrors, gpuOption, toGpuChoice, type GpuFlag } from "../options.js";

interface InfoFlags {
  backend?: "llama-cpp" | "webgpu";
  gpu?: GpuFlag;
  json?: boolean;
}

/** Registers `kiln info`: what a backend finds on this machine (for webgpu: the adapter, its tier and limits). */
export function registerInfo(program: Command): void {
  const command = program
    .command("info")
    .description("show what a backend finds on this machine: llama.cpp's GPU backend and devices with their memory, or the WebGPU adapter, tier and limits")
    .addOption(backendOption().default("llama-cpp"))
    .addOption(gpuOption())
    .option("--json", "print JSON")
    .addHelpText("after", "\nExamples:\n  kiln info\n  kiln info --gpu vulkan\n  kiln info --backend webgpu --json\n")
    .action(async (flags: InfoFlags) => {
      const { describeBackend } = await import("../../engine/index.js");
      const { cacheDir } = await import("../../models/index.js");
      const facts = await describeBackend(flags.backend ?? "llama-cpp", { gpu: toGpuChoice(flags.gpu), cacheDir: cacheDir() });
      process.stdout.write(`${flags.json ? JSON.stringify(facts, null, 2) : formatFacts(facts)}\n`);
    });
  formatFlagErrors(command);
}

/** Scalars as a two-column table; lists and objects (devices, features, limits) one entry per line below it. */
function formatFacts(facts: Record<string, unknown>): string {
  const rows = Object.entries(facts).filter(([, value]) => typeof value !== "object").map(([key, value]) => [key, String(value)]);
  const nested = Object.entries(facts).filter(([, value]) => typeof value === "object" && value !== null && !(Array.isArray(value) && value.length === 0));
  const sections = nested.map(([key, value]) => {
    const entries = Array.isArray(value) ? value.map((item) => `  ${formatItem(item)}`) : Object.entries(value as object).map(([k, v]) => `  ${k}: ${String(v)}`);
    return [`${key}:`, ...entries].join("\n");
  });
  return [formatTable(["fact", "value"], rows), ...sections].join("\n\n");
}

/** A device of llama.cpp's (`kind` cpu or gpu, with its memory), or any other listed value as it prints. */
function formatItem(item: unknown): string {
  if (typeof item !== "object" || item === null) return String(item);
  const device = item as Record<string, unknown>;
  if (device.kind === "cpu") {
    return `CPU ${String(device.name)} (${String(device.cores)} cores): RAM ${formatBytes(device.ramTotalBytes)} total, ${formatBytes(device.ramFreeBytes)} free`;
  }
  if (device.kind === "gpu") {
    const names = Array.isArray(device.names) && device.names.length ? ` (${device.names.join(", ")})` : "";
    const unified = typeof device.unifiedMemoryBytes === "number" && device.unifiedMemoryBytes > 0 ? `, ${formatBytes(device.unifiedMemoryBytes)} shared with the CPU` : "";
    return `GPU ${String(device.backend)}${names}: VRAM ${formatBytes(device.vramTotalBytes)} total, ${formatBytes(device.vramFreeBytes)} free${unified}`;
  }
  return JSON.stringify(item);
}

function formatBytes(value: unknown): string {
  const bytes = typeof value === "number" ? value : Number.NaN;
  if (!Number.isFinite(bytes)) return "unknown";
  return bytes >= 1024 ** 3 ? `${(bytes / 1024 ** 3).toFixed(1)} GiB` : `${Math.round(bytes / 1024 ** 2)} MiB`;
}
