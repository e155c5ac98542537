/**
 * transposeSum's exchanges, run lane by lane by a small interpreter of the WGSL it writes (every subgroup size and
 * output count, including subgroups wider than the outputs, which no adapter here has); the kernels that use it
 * are checked on a real adapter with subgroups in gemm.test.ts and gemv.test.ts.
 */
import { describe, expect, it } from "vitest";
import { fixedSubgroupSize, transposeSum } from "./subgroup-sum.js";

/** Runs the statements of `code` on `size` lanes whose variables start as `initial[lane]`. */
function runLanes(code: string, size: number, initial: Array<Record<string, number | boolean>>): Array<Record<string, number | boolean>> {
  type Vars = Record<string, number | boolean>;
  const lanes: Vars[] = initial.map((values, lane) => ({ ...values, sg_lane: lane }));
  const value = (lane: number, name: string) => lanes[lane]![name] as number;
  for (const line of code.split("\n").map((l) => l.trim()).filter(Boolean)) {
    let m: RegExpMatchArray | null;
    if ((m = line.match(/^let (\w+) = \(sg_lane & (\d+)u\) != 0u;$/))) {
      const [, name, mask] = m;
      lanes.forEach((vars, lane) => (vars[name!] = (lane & Number(mask)) !== 0));
    } else if ((m = line.match(/^let (\w+) = select\((\w+), (\w+), (\w+)\) \+ subgroupShuffleXor\(select\((\w+), (\w+), (\w+)\), (\d+)u\);$/))) {
      const [, name, keepLo, keepHi, hi, sendLo, sendHi, hiAgain, mask] = m;
      expect(hiAgain).toBe(hi);
      const next = lanes.map((vars, lane) => {
        const partner = lanes[lane ^ Number(mask)]!;
        const keep = vars[hi!] ? value(lane, keepHi!) : value(lane, keepLo!);
        const sent = partner[hi!] ? (partner[sendHi!] as number) : (partner[sendLo!] as number);
        return keep + sent;
      });
      lanes.forEach((vars, lane) => (vars[name!] = next[lane]!));
    } else if ((m = line.match(/^let (\w+) = (\w+) \+ subgroupShuffleXor\((\w+), (\d+)u\);$/))) {
      const [, name, own, shared, mask] = m;
      const next = lanes.map((_, lane) => value(lane, own!) + value(lane ^ Number(mask), shared!));
      lanes.forEach((vars, lane) => (vars[name!] = next[lane]!));
    } else {
      throw new Error(`unexpected statement: ${line}`);
    }
  }
  return lanes;
}

/** A WGSL expression of select(0u, Nu, flag) terms, or a mask test, evaluated for one lane. */
function evaluate(expression: string, vars: Record<string, number | boolean>): number | boolean {
  if (expression === "true") return true;
  if (expression === "0u") return 0;
  const mask = expression.match(/^\(sg_lane & (\d+)u\) == 0u$/);
  if (mask) return ((vars.sg_lane as number) & Number(mask[1])) === 0;
  return expression.split(" + ").reduce((sum, term) => {
    const [, value, flag] = term.match(/^select\(0u, (\d+)u, (\w+)\)$/)!;
    return sum + (vars[flag!] ? Number(value) : 0);
  }, 0);
}

describe("transposeSum", () => {
  for (const size of [1, 2, 8, 32, 64]) {
    for (const outputs of [1, 4, 32]) {
      it(`sums ${outputs} outputs over a subgroup of ${size}, each once, in two sets alike`, () => {
        const partial = (set: number, lane: number, o: number) => (set + 1) * 1000 * (o + 1) + lane;
        const names = (set: number) => Array.from({ length: outputs }, (_, o) => `v${set}_${o}`);
        const sums = transposeSum([names(0), names(1)], size);
        const initial = Array.from({ length: size }, (_, lane) => Object.fromEntries([0, 1].flatMap((set) => names(set).map((name, o) => [name, partial(set, lane, o)]))));
        const lanes = runLanes(sums.code, size, initial);
        const seen = new Map<number, number[]>();
        for (const vars of lanes) {
          if (!evaluate(sums.owner, vars)) continue;
          const base = evaluate(sums.base, vars) as number;
          sums.kept[0]!.forEach((name, i) => seen.set(base + i, [vars[name] as number, vars[sums.kept[1]![i]!] as number]));
          expect(sums.kept[0]!.length).toBe(Math.max(1, outputs / size));
        }
        const laneSum = (size * (size - 1)) / 2;
        expect([...seen.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: outputs }, (_, o) => o));
        for (const [o, [a, u]] of seen) {
          expect(a).toBe(size * 1000 * (o + 1) + laneSum);
          expect(u).toBe(size * 2000 * (o + 1) + laneSum);
        }
        // Owners hold distinct outputs: as many owners as there are lanes, or outputs where those are fewer.
        expect(lanes.filter((vars) => evaluate(sums.owner, vars)).length).toBe(Math.min(size, outputs));
      });
    }
  }

  it("refuses sizes that are not powers of two", () => {
    expect(() => transposeSum([["a", "b", "c"]], 8)).toThrow(RangeError);
    expect(() => transposeSum([["a", "b"]], 12)).toThrow(RangeError);
  });
});

describe("fixedSubgroupSize", () => {
  const offered = { has: (name: string) => name === "subgroups" };
  it("is the size where subgroups are offered at one power-of-two size", () => {
    expect(fixedSubgroupSize(offered, { subgroupMinSize: 32, subgroupMaxSize: 32 })).toBe(32);
    expect(fixedSubgroupSize(offered, { subgroupMinSize: 8, subgroupMaxSize: 32 })).toBeUndefined();
    expect(fixedSubgroupSize({ has: () => false }, { subgroupMinSize: 32, subgroupMaxSize: 32 })).toBeUndefined();
    expect(fixedSubgroupSize(offered, {})).toBeUndefined();
  });
});
