/**
 * Sums across the lanes of a subgroup with its shuffles instead of workgroup memory and barriers (adapters with
 * the `subgroups` feature and one fixed subgroup size: NVIDIA 32, Mesa's lavapipe 8). A split-K kernel ends with
 * every lane holding partial sums of the same outputs; a tree in workgroup memory adds them in log2(lanes) rounds,
 * each a barrier and a pass over all the outputs. Here each exchange also halves what a lane holds (a lane keeps one
 * half of its values and sends its partner the other, and each adds what it receives): 32 outputs over 32 lanes take
 * 16 + 8 + 4 + 2 + 1 = 31 shuffles a lane and leave each lane one finished output, with no barrier.
 */

/** The WGSL that a kernel using these sums needs first in its source. */
export const SUBGROUPS_ENABLE = "enable subgroups;";

/** The builtins the sums read, for a compute entry point's parameter list. */
export const SUBGROUP_BUILTINS = "@builtin(subgroup_invocation_id) sg_lane: u32, @builtin(subgroup_id) sg_id: u32";

/** Where a lane's values are after `transposeSum`. */
export interface TransposedSums {
  /** WGSL statements doing the exchanges (inside the entry point, in uniform control flow). */
  code: string;
  /** Per input set, the names of the values the lane keeps: the outputs `base`, `base + 1`, … summed over the subgroup. */
  kept: string[][];
  /** A WGSL u32 expression: the output index of each set's first kept value. */
  base: string;
  /** A WGSL bool: whether this lane's kept values are its own (false on lanes that hold a copy of another's). */
  owner: string;
}

/**
 * Sums each of `sets` (equal-length lists of f32 WGSL expressions, a power of two long: the outputs' partial sums of
 * this lane) over a subgroup of `size` lanes. Every set goes through the same exchanges, so kept value i of each set
 * belongs to the same output. With more values than lanes each lane keeps values / size of them; with fewer, the last
 * exchanges only add, and only one lane of each group of copies is the owner.
 */
export function transposeSum(sets: string[][], size: number, prefix = "sg"): TransposedSums {
  const count = sets[0]?.length ?? 0;
  if (!isPowerOfTwo(size) || !isPowerOfTwo(count) || sets.some((set) => set.length !== count)) throw new RangeError("subgroup sums need power-of-two sizes");
  const lines: string[] = [];
  const base: string[] = [];
  let copies = 0;
  let current = sets;
  let held = count;
  for (let mask = size / 2, step = 0; mask >= 1; mask /= 2, step++) {
    if (held > 1) {
      const half = held / 2;
      const hi = `${prefix}_hi${step}`;
      lines.push(`let ${hi} = (sg_lane & ${mask}u) != 0u;`);
      current = current.map((set, s) => Array.from({ length: half }, (_, i) => {
        const name = `${prefix}${s}_${step}_${i}`;
        const [lo, up] = [set[i]!, set[i + half]!];
        lines.push(`let ${name} = select(${lo}, ${up}, ${hi}) + subgroupShuffleXor(select(${up}, ${lo}, ${hi}), ${mask}u);`);
        return name;
      }));
      base.push(`select(0u, ${half}u, ${hi})`);
      held = half;
    } else {
      current = current.map((set, s) => set.map((value, i) => {
        const name = `${prefix}${s}_${step}_${i}`;
        lines.push(`let ${name} = ${value} + subgroupShuffleXor(${value}, ${mask}u);`);
        return name;
      }));
      copies |= mask;
    }
  }
  return { code: lines.join("\n  "), kept: current, base: base.length ? base.join(" + ") : "0u", owner: copies ? `(sg_lane & ${copies}u) == 0u` : "true" };
}

/** The adapter's subgroup size when the kernels may use it: subgroups offered, one size, a power of two. */
export function fixedSubgroupSize(features: { has(name: string): boolean }, info: { subgroupMinSize?: number; subgroupMaxSize?: number }): number | undefined {
  const { subgroupMinSize: min, subgroupMaxSize: max } = info;
  if (!features.has("subgroups") || !min || min !== max || !isPowerOfTwo(min)) return undefined;
  return min;
}

function isPowerOfTwo(n: number): boolean {
  return Number.isInteger(n) && n >= 1 && (n & (n - 1)) === 0;
}
