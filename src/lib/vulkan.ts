/**
 * Whether Vulkan can work on this machine, read from the files the Vulkan loader itself reads (Linux), without
 * loading it: a GPU backend that tries Vulkan where the loader (libvulkan1) is installed but no driver is (a server
 * or container without a GPU) prints warnings and spends a start-up finding that out.
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
