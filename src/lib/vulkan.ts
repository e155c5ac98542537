/**
 * Whether Vulkan can work on this machine, read from the files the Vulkan loader itself reads (Linux), without
 * loading it: a GPU backend that tries Vulkan where the loader (libvulkan1) is installed but no driver is (a server
 * or container without a GPU) prints warnings and spends a start-up finding that out. So does one where the only
 * drivers are software ones: Mesa's package installs every driver's manifest (its GPU drivers' and lavapipe's) on any
 * machine, so the manifests cannot tell; the GPU's device node can.
 */
import { existsSync, readdirSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

const LIBRARY_DIRS = ["/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib", "/lib/x86_64-linux-gnu", "/usr/local/lib"];

/** Whether libvulkan.so.1 is where the dynamic linker finds it (LD_LIBRARY_PATH, then the usual folders). */
export function hasVulkanLoader(env: NodeJS.ProcessEnv = process.env): boolean {
  const extra = (env.LD_LIBRARY_PATH ?? "").split(":").filter(Boolean);
  return [...extra, ...LIBRARY_DIRS].some((dir) => existsSync(join(dir, "libvulkan.so.1")));
}

/**
 * Whether the Vulkan loader would find any driver manifest (ICD JSON): those named by VK_DRIVER_FILES or
 * VK_ICD_FILENAMES (which replace the search) or VK_ADD_DRIVER_FILES, else any in the folders it searches (the
 * XDG config and data folders and the system's configuration folders, each's vulkan/icd.d). False only where no
 * manifest exists at all; a software driver's counts (the GPU backend then finds no GPU itself).
 */
export function hasVulkanDriver(env: NodeJS.ProcessEnv = process.env, systemConfigDirs = ["/etc", "/usr/local/etc"]): boolean {
  const listed = (value: string | undefined) => (value ?? "").split(":").filter(Boolean);
  const present = (path: string) => (path.endsWith(".json") ? existsSync(path) : hasManifest(path));
  const override = listed(env.VK_DRIVER_FILES ?? env.VK_ICD_FILENAMES);
  if (override.length) return override.some(present) || listed(env.VK_ADD_DRIVER_FILES).some(present);
  const home = homedir();
  const configDirs = [env.XDG_CONFIG_HOME || join(home, ".config"), ...(env.XDG_CONFIG_DIRS || "/etc/xdg").split(":"), ...systemConfigDirs];
  const dataDirs = [env.XDG_DATA_HOME || join(home, ".local/share"), ...(env.XDG_DATA_DIRS || "/usr/local/share:/usr/share").split(":")];
  return listed(env.VK_ADD_DRIVER_FILES).some(present) || [...configDirs, ...dataDirs].some((dir) => hasManifest(join(dir, "vulkan/icd.d")));
}

function hasManifest(dir: string): boolean {
  try {
    return readdirSync(dir).some((name) => name.endsWith(".json"));
  } catch {
    return false;
  }
}

/**
 * Whether a GPU a Vulkan driver could drive has a device node: a DRM render node (Mesa's drivers: AMD, Intel,
 * Broadcom, virtual GPUs), NVIDIA's own nodes, WSL's GPU paravirtualization, or the nodes of Android-style drivers
 * (Qualcomm Adreno, Arm Mali). A driver reaches its GPU only through one of these; with none, a Vulkan device can
 * only be a software one (lavapipe, SwiftShader), which llama.cpp does not use.
 */
export function hasGpuDeviceNode(devDir = "/dev"): boolean {
  const names = (dir: string) => {
    try {
      return readdirSync(dir);
    } catch {
      return [];
    }
  };
  return names(join(devDir, "dri")).some((name) => name.startsWith("renderD"))
    || names(devDir).some((name) => /^(nvidia\d+|dxg|kgsl-3d\d+|mali\d+)$/.test(name));
}
