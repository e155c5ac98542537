/**
 * Backend name → factory. The built-in backends are imported lazily, so opening an engine loads only the
 * backends its models name (no native addon for a remote-only engine, no Dawn without a WebGPU model).
 */
import type { Backend, BackendFactory } from "./backend.js";
import { toBackendSettings, type BackendSettings } from "./engine-options.js";
import { EngineError } from "../errors/engine-error.js";

const factories = new Map<string, BackendFactory>([
  ["llama-cpp", async (settings) => (await import("./backends/llama-cpp/llama-cpp-backend.js")).openLlamaCppBackend(settings)],
  ["webgpu", async (settings) => (await import("./backends/webgpu/webgpu-backend.js")).openWebGpuBackend(settings)],
  ["remote", async () => (await import("./backends/remote/remote-backend.js")).openRemoteBackend()],
  ["scripted", async () => (await import("./backends/scripted/scripted-backend.js")).openScriptedBackend()],
]);

/** Adds a backend (or replaces one) under `name`; models name it in their declaration's `backend`. */
export function registerBackend<Spec>(name: string, factory: BackendFactory<Spec>): void {
  factories.set(name, factory as BackendFactory);
}

/** The names models may use. */
export function listBackendNames(): string[] {
  return [...factories.keys()];
}

/** Opens the backend registered under `name`. */
export async function openBackend(name: string, settings: BackendSettings): Promise<Backend> {
  const factory = factories.get(name);
  if (!factory) throw new EngineError("invalid_request", `backend: unknown backend "${name}" (known: ${listBackendNames().join(", ")})`, { param: "backend" });
  return factory(settings);
}

/** What a backend finds on this machine (`kiln info`): opened with these settings (default: none), described, released. */
export async function describeBackend(name: string, settings: Partial<BackendSettings> = {}): Promise<Record<string, unknown>> {
  const backend = await openBackend(name, toBackendSettings(settings));
  try {
    return { backend: name, ...(await backend.describe?.()) };
  } finally {
    await backend.dispose();
  }
}
