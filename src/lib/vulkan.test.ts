import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { hasGpuDeviceNode, hasVulkanDriver, hasVulkanLoader } from "./vulkan.js";

const root = mkdtempSync(join(tmpdir(), "kiln-vulkan-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** A folder tree under `root` with `files` (paths relative to it) written. */
function tree(name: string, files: string[]): string {
  const dir = join(root, name);
  for (const file of files) {
    mkdirSync(join(dir, file, ".."), { recursive: true });
    writeFileSync(join(dir, file), "{}");
  }
  mkdirSync(dir, { recursive: true });
  return dir;
}

/** An environment whose XDG folders all lie in `dir` (the system's own are not searched). */
function xdg(dir: string): NodeJS.ProcessEnv {
  return { XDG_CONFIG_HOME: join(dir, "config"), XDG_CONFIG_DIRS: join(dir, "xdg"), XDG_DATA_HOME: join(dir, "data"), XDG_DATA_DIRS: `${join(dir, "share")}:${join(dir, "usr-share")}` };
}

describe("hasVulkanDriver", () => {
  it("finds a driver manifest in any folder the Vulkan loader searches, and none where there is none", () => {
    const none = tree("none", ["share/vulkan/explicit_layer.d/layer.json", "share/vulkan/icd.d/README"]);
    expect(hasVulkanDriver(xdg(none), [])).toBe(false);
    for (const place of ["config/vulkan/icd.d/a.json", "xdg/vulkan/icd.d/a.json", "data/vulkan/icd.d/a.json", "usr-share/vulkan/icd.d/lvp_icd.x86_64.json"]) {
      const dir = tree(place.replaceAll("/", "-"), [place]);
      expect(hasVulkanDriver(xdg(dir), []), place).toBe(true);
    }
    const etc = tree("etc", ["vulkan/icd.d/nvidia_icd.json"]);
    expect(hasVulkanDriver(xdg(none), [etc])).toBe(true);
  });

  it("reads only the files VK_DRIVER_FILES or VK_ICD_FILENAMES name (files or folders), plus VK_ADD_DRIVER_FILES", () => {
    const found = tree("found", ["usr-share/vulkan/icd.d/a.json", "mine/b.json"]);
    expect(hasVulkanDriver({ ...xdg(found), VK_ICD_FILENAMES: "/nonexistent/icd.json" }, [])).toBe(false);
    expect(hasVulkanDriver({ ...xdg(found), VK_DRIVER_FILES: join(found, "mine/b.json") }, [])).toBe(true);
    expect(hasVulkanDriver({ ...xdg(found), VK_DRIVER_FILES: `/nonexistent.json:${join(found, "mine")}` }, [])).toBe(true);
    const none = tree("none-2", []);
    expect(hasVulkanDriver({ ...xdg(none), VK_ADD_DRIVER_FILES: join(found, "mine/b.json") }, [])).toBe(true);
  });
});

describe("hasVulkanLoader", () => {
  it("finds libvulkan.so.1 on LD_LIBRARY_PATH", () => {
    const lib = tree("lib", ["libvulkan.so.1"]);
    expect(hasVulkanLoader({ LD_LIBRARY_PATH: `/nonexistent:${lib}` })).toBe(true);
  });
});

describe("hasGpuDeviceNode", () => {
  it("finds a GPU's device node (DRM render node, NVIDIA's, WSL's, Adreno's, Mali's) and nothing else", () => {
    expect(hasGpuDeviceNode(tree("dev-none", ["null", "dri/card0", "nvidiactl", "nvidia-uvm", "dxgkrnl"]))).toBe(false);
    expect(hasGpuDeviceNode(join(root, "no-such-dev"))).toBe(false);
    for (const node of ["dri/renderD128", "nvidia0", "nvidia7", "dxg", "kgsl-3d0", "mali0"]) {
      expect(hasGpuDeviceNode(tree(`dev-${node.replace("/", "-")}`, ["null", node])), node).toBe(true);
    }
  });
});
