/**
 * Opens the Dawn WebGPU device kiln computes on: the first backend that offers an adapter (Vulkan, Metal or D3D12 on a
 * GPU; Mesa's software renderer through GLES otherwise), with the adapter's own limits, and turns device loss and
 * uncaptured errors into engine errors.
 */
import { create, globals } from "webgpu";
import { EngineError } from "../../../errors/engine-error.js";
import { hasVulkanDriver, hasVulkanLoader } from "../../../lib/vulkan.js";
import { captureNativeStderr } from "./native-stderr.js";
import { fixedSubgroupSize } from "./kernels/subgroup-sum.js";

/** How the device is described: "fast" is a GPU whose fixed-size subgroups the GPU kernels sum with, else "portable". */
export type GpuTier = "portable" | "fast";

/** What kiln reports about the opened device (`--backend webgpu --info`). */
export interface GpuDeviceInfo {
  /** Dawn backend that produced the adapter: "vulkan" or "opengles". */
  backend: string;
  vendor: string;
  architecture: string;
  /** Adapter device name (llvmpipe puts "llvmpipe-…" here) and driver description. */
  device: string;
  description: string;
  tier: GpuTier;
  /** Whether the adapter is a CPU rasterizer (llvmpipe, SwiftShader): fine for tests, not for serving. */
  software: boolean;
  features: string[];
  /**
   * The subgroup size the kernels may rely on: where the adapter offers `subgroups` (the device is opened with it)
   * and runs every subgroup at one size (NVIDIA 32, Mesa's lavapipe 8); undefined elsewhere.
   */
  subgroupSize?: number;
  /** The limits the device was opened with (the adapter's, not the low compat defaults). */
  limits: Record<string, number>;
  /** What Dawn noted while enumerating adapters (limits it clamped), kept off stderr. */
  notices: string[];
}

/** An open Dawn device. Holding this object keeps gpu/adapter/device alive (dawn.node crashes if the adapter is collected). */
export interface GpuDevice {
  gpu: GPU;
  adapter: GPUAdapter;
  device: GPUDevice;
  info: GpuDeviceInfo;
  /** Resolves when the device is lost (never rejects); destroy() resolves it too, with reason "destroyed". */
  lost: Promise<EngineError>;
  /** The first uncaptured validation/OOM/internal error, if any; kernels call throwIfFailed() after readbacks. */
  failure: EngineError | undefined;
  throwIfFailed(): void;
  destroy(): void;
}

/** Options for openGpuDevice. */
export interface OpenGpuDeviceOptions {
  /** Dawn backends to try in order; default from KILN_WEBGPU_BACKEND ("vulkan,opengles"), else vulkan then opengles. */
  backends?: string[];
  /** Called once for the first uncaptured error or device loss. */
  onFailure?: (error: EngineError) => void;
}

// Module-level pins: even a caller that drops its GpuDevice cannot let the adapter be collected under a live device.
const pinned = new Set<GpuDevice>();

/**
 * Opens the first GPU among `backends` (else a software renderer, the last backend's that offers one), requesting the
 * adapter's own limits. Throws EngineError "backend_failure" if none opens.
 */
export async function openGpuDevice(options: OpenGpuDeviceOptions = {}): Promise<GpuDevice> {
  process.env.EGL_PLATFORM ??= "surfaceless"; // headless GL through Mesa: no X/Wayland display here
  Object.assign(globalThis, globals); // GPUBufferUsage, GPUMapMode, GPUShaderStage as in a browser
  const backends = options.backends ?? defaultBackends();
  const problems: string[] = [];
  const candidates: Array<{ backend: string; gpu: GPU; adapter: GPUAdapter }> = [];
  for (const backend of backends) {
    const found = await requestAdapter(backend);
    if ("said" in found) {
      problems.push(`${backend}: no adapter${found.said.length ? ` (${found.said.join(" ")})` : ""}`);
      continue;
    }
    candidates.push({ backend, ...found });
    // A software renderer lets a later backend try: Mesa's renderer ran kiln's kernels at half the speed through
    // Vulkan (lavapipe) that it reaches through GLES (bench/results/2026-11-28-vm-webgpu-lavapipe-vs-gles.md), and a
    // GPU with GL but no Vulkan driver shows up as lavapipe through Vulkan.
    if (!isSoftware(found.adapter)) break;
  }
  // Latest first: the GPU the loop stopped at, else the last software renderer found.
  for (const { backend, gpu, adapter } of candidates.reverse()) {
    try {
      return await openOn(backend, gpu, adapter, options);
    } catch (error) {
      problems.push(`${backend}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  throw new EngineError("backend_failure", `No WebGPU device could be opened (${problems.join("; ")})`);
}

/** Like openGpuDevice but returns undefined when no adapter comes up (tests skip on it). */
export async function tryOpenGpuDevice(options: OpenGpuDeviceOptions = {}): Promise<GpuDevice | undefined> {
  try {
    return await openGpuDevice(options);
  } catch {
    return undefined;
  }
}

function defaultBackends(): string[] {
  const fromEnv = process.env.KILN_WEBGPU_BACKEND?.split(",").map((s) => s.trim()).filter(Boolean);
  if (fromEnv?.length) return fromEnv;
  if (process.platform === "darwin") return ["metal"];
  if (process.platform === "win32") return ["d3d12", "vulkan"];
  // Vulkan only where its loader and a driver are installed: elsewhere Dawn's attempt finds nothing.
  return hasVulkanLoader() && hasVulkanDriver() ? ["vulkan", "opengles"] : ["opengles"];
}

/**
 * What Dawn printed while enumerating adapters: notices about limits it clamps, a Vulkan loader that found no driver,
 * an adapter it rejected. They are printed natively, not through any callback, and concern adapters kiln may not
 * use: kept for `kiln info --backend webgpu` and for the error when no device opens, instead of the user's stderr
 * (where they would land in the output of `kiln run … 2>&1`).
 */
const notices = new Set<string>();

/** Dawn's lines, without the source locations it adds under some ("    at CheckVkSuccessImpl (…)"). */
function dawnNotices(captured: string): string[] {
  return captured.split("\n").filter((line) => line.trim() && !/^\s+at /.test(line)).map((line) => line.trim());
}

async function requestAdapter(backend: string): Promise<{ gpu: GPU; adapter: GPUAdapter } | { said: string[] }> {
  const said: string[] = [];
  try {
    const gpu = create([`backend=${backend}`]);
    // GL only offers compatibility-level adapters (null without featureLevel); Vulkan offers core.
    for (const featureLevel of ["core", "compatibility"]) {
      const { result, captured } = captureNativeStderr(() => gpu.requestAdapter({ featureLevel } as GPURequestAdapterOptions));
      for (const line of dawnNotices(captured)) {
        said.push(line);
        notices.add(line);
      }
      const adapter = await result;
      if (adapter) return { gpu, adapter };
    }
  } catch {
    // A missing loader or driver is not fatal: the next backend may work.
  }
  return { said };
}

async function openOn(backend: string, gpu: GPU, adapter: GPUAdapter, options: OpenGpuDeviceOptions): Promise<GpuDevice> {
  const limits = readLimits(adapter.limits);
  // Timestamp queries only serve profiles (bench:webgpu --profile), and cost nothing unless written.
  const requiredFeatures: GPUFeatureName[] = adapter.features.has("timestamp-query") ? ["timestamp-query"] : [];
  if (fixedSubgroupSize(adapter.features, adapter.info)) requiredFeatures.push("subgroups" as GPUFeatureName);
  const device = await adapter.requestDevice({ requiredLimits: limits, requiredFeatures });
  const info = describeAdapter(backend, adapter, limits);
  let reportFailure = (_error: EngineError): void => {};
  const lost = device.lost.then((loss) => {
    const error = new EngineError("backend_failure", `WebGPU device lost (${loss.reason}): ${loss.message}`, { reason: loss.reason });
    if (loss.reason !== "destroyed") reportFailure(error);
    pinned.delete(handle);
    return error;
  });
  const handle: GpuDevice = {
    gpu, adapter, device, info, lost, failure: undefined,
    throwIfFailed() {
      if (handle.failure) throw handle.failure;
    },
    destroy() {
      device.destroy();
    },
  };
  reportFailure = (error) => {
    if (handle.failure) return;
    handle.failure = error;
    options.onFailure?.(error);
  };
  device.onuncapturederror = (event) => {
    reportFailure(new EngineError("backend_failure", `WebGPU error: ${event.error.message}`, { kind: event.error.constructor.name }));
  };
  pinned.add(handle);
  return handle;
}

function readLimits(source: GPUSupportedLimits): Record<string, number> {
  const limits: Record<string, number> = {};
  // The limits object exposes getters on its prototype, so for…in (not Object.keys) finds them.
  for (const key in source) {
    const value = (source as unknown as Record<string, unknown>)[key];
    if (typeof value === "number") limits[key] = value;
  }
  return limits;
}

/** Whether an adapter is a CPU rasterizer (Mesa's llvmpipe through GLES or Vulkan, SwiftShader). */
function isSoftware(adapter: GPUAdapter): boolean {
  const { device, architecture, description } = adapter.info;
  return /llvmpipe|swiftshader|softpipe|lavapipe/i.test(`${device} ${architecture} ${description}`);
}

function describeAdapter(backend: string, adapter: GPUAdapter, limits: Record<string, number>): GpuDeviceInfo {
  const { vendor, architecture, device, description } = adapter.info;
  const features = [...adapter.features].map(String).sort();
  const software = isSoftware(adapter);
  const subgroupSize = fixedSubgroupSize(adapter.features, adapter.info);
  // The fast tier: a real GPU whose subgroups the split-K kernels sum with.
  const fast = !software && subgroupSize !== undefined;
  return { backend, vendor, architecture, device, description, tier: fast ? "fast" : "portable", software, features, subgroupSize, limits, notices: [...notices] };
}
