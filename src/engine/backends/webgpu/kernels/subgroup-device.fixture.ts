/**
 * Test-only: a WebGPU device whose adapter runs subgroups at one fixed size, for the kernels' subgroup variants: a
 * GPU's, or Mesa's Vulkan software renderer (lavapipe), which `scripts/lavapipe.sh` unpacks under .cache/ where the
 * system's Mesa is too old for Dawn.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { tryOpenGpuDevice, type GpuDevice } from "../device.js";

/** The driver list (ICD file) of the lavapipe under the repository's .cache/, or undefined when it is not there. */
export function lavapipeIcd(): string | undefined {
  const icd = fileURLToPath(new URL("../../../../../.cache/lavapipe/lvp_icd.json", import.meta.url));
  return existsSync(icd) ? icd : undefined;
}

/**
 * Runs `open` with the Vulkan loader pointed at that lavapipe (where it is there). The loader reads its driver list
 * when Dawn creates an instance, so only the devices opened meanwhile see it.
 */
export async function withLavapipe<T>(open: () => Promise<T>): Promise<T> {
  const icd = lavapipeIcd();
  const saved = process.env.VK_ICD_FILENAMES;
  if (icd) process.env.VK_ICD_FILENAMES = icd;
  try {
    return await open();
  } finally {
    if (saved === undefined) delete process.env.VK_ICD_FILENAMES;
    else process.env.VK_ICD_FILENAMES = saved;
  }
}

/**
 * A device on a Vulkan adapter with fixed-size subgroups, or undefined (those tests skip) where none comes up;
 * KILN_REQUIRE_SUBGROUPS=1 (CI, after scripts/lavapipe.sh) makes that an error instead.
 */
export async function openSubgroupDevice(): Promise<GpuDevice | undefined> {
  const device = await withLavapipe(() => tryOpenGpuDevice({ backends: ["vulkan"] }));
  if (device?.info.subgroupSize) return device;
  device?.destroy();
  if (process.env.KILN_REQUIRE_SUBGROUPS === "1") throw new Error("KILN_REQUIRE_SUBGROUPS=1 but no adapter with fixed-size subgroups came up (run scripts/lavapipe.sh)");
  return undefined;
}
