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
 * A device on a Vulkan adapter with fixed-size subgroups, or undefined (those tests skip) where none comes up;
 * KILN_REQUIRE_SUBGROUPS=1 (CI, after scripts/lavapipe.sh) makes that an error instead.
 */
export async function openSubgroupDevice(): Promise<GpuDevice | undefined> {
  // The Vulkan loader reads its driver list when Dawn creates an instance, so pointing it at lavapipe here changes
  // only the devices opened meanwhile.
  const icd = lavapipeIcd();
  const saved = process.env.VK_ICD_FILENAMES;
  if (icd) process.env.VK_ICD_FILENAMES = icd;
  try {
    const device = await tryOpenGpuDevice({ backends: ["vulkan"] });
    if (device?.info.subgroupSize) return device;
    device?.destroy();
  } finally {
    if (saved === undefined) delete process.env.VK_ICD_FILENAMES;
    else process.env.VK_ICD_FILENAMES = saved;
  }
  if (process.env.KILN_REQUIRE_SUBGROUPS === "1") throw new Error("KILN_REQUIRE_SUBGROUPS=1 but no adapter with fixed-size subgroups came up (run scripts/lavapipe.sh)");
  return undefined;
}
