/**
 * WGSL readers for "kiln-planar v1" weights (see gguf/planar.ts). Each weight matrix binds as up to three planes
 * (quants, meta, high) named `<p>_quants` … so one shader can read two matrices (gate and up) with two prefixes.
 */
import { GgmlType, typeName } from "../gguf/quant-types.js";

/** Plane names a type binds, in binding order. F32/F16 have no meta; only Q5 has `high`. */
export function weightPlanes(type: GgmlType): ("quants" | "meta" | "high")[] {
  switch (type) {
    case GgmlType.F32: case GgmlType.F16: return ["quants"];
    case GgmlType.Q4_0: case GgmlType.Q4_1: case GgmlType.Q8_0: case GgmlType.Q4_K: case GgmlType.Q6_K: return ["quants", "meta"];
    case GgmlType.Q5_0: case GgmlType.Q5_1: case GgmlType.Q5_K: return ["quants", "meta", "high"];
    default: throw new RangeError(`the portable kernels do not read ${typeName(type)} yet`);
  }
}

/** K-quants, whose planar meta is two f32 per 32-block (see gguf/k-planar.ts). */
function isK(type: GgmlType): boolean {
  return type === GgmlType.Q4_K || type === GgmlType.Q5_K || type === GgmlType.Q6_K;
}

/** `var<storage>` declarations of one matrix's planes, from binding `first` on; quants are vec4<u32> for aligned loads. */
export function declarePlanes(type: GgmlType, p: string, first: number): string {
  const element = (plane: string) => (plane === "quants" ? "vec4<u32>" : plane === "meta" && isK(type) ? "vec2<f32>" : "u32");
  return weightPlanes(type)
    .map((plane, k) => `@group(0) @binding(${first + k}) var<storage, read> ${p}_${plane}: array<${element(plane)}>;`)
    .join("\n");
}

/** Helpers shared by every reader: nibble, 5th-bit and int8 unpacking to vec4<f32>. */
export const unpackWgsl = /* wgsl */ `
fn nib_lo(w: u32) -> vec4<f32> { return vec4<f32>(unpack4xU8(w & 0x0f0f0f0fu)); }
fn nib_hi(w: u32) -> vec4<f32> { return vec4<f32>(unpack4xU8((w >> 4u) & 0x0f0f0f0fu)); }
// 4 bits of h from bit s, spread to bit 4 of each byte (x·0x204081 moves bit k to bit 8k), OR-ed onto the nibbles.
fn q5_lo(w: u32, h: u32, s: u32) -> vec4<f32> { return vec4<f32>(unpack4xU8((w & 0x0f0f0f0fu) | (((((h >> s) & 15u) * 0x204081u) & 0x01010101u) << 4u))); }
fn q5_hi(w: u32, h: u32, s: u32) -> vec4<f32> { return vec4<f32>(unpack4xU8(((w >> 4u) & 0x0f0f0f0fu) | (((((h >> s) & 15u) * 0x204081u) & 0x01010101u) << 4u))); }
// int8 q + 128 as u8 (flipping each sign bit), so Q8_0 takes the same unsigned path as the nibbles; the −128 factors out.
fn u8x4(w: u32) -> vec4<f32> { return vec4<f32>(unpack4xU8(w ^ 0x80808080u)); }
fn u6x4(w: u32) -> vec4<f32> { return vec4<f32>(unpack4xU8(w)); }
fn f16x4(a: u32, b: u32) -> vec4<f32> { return vec4<f32>(unpack2x16float(a), unpack2x16float(b)); }
`;

/** The raw (unscaled) vec4 of weights 4j..4j+3 of block `i`, as a WGSL expression list per slice j (constant). */
function rawSlices(type: GgmlType, p: string): string[] {
  const q = ["x", "y", "z", "w"];
  const slices: string[] = [];
  for (let j = 0; j < 8; j++) {
    const word = `q.${q[j % 4]}`;
    switch (type) {
      case GgmlType.F32: slices.push(`bitcast<vec4<f32>>(${p}_quants[i * 8u + ${j}u])`); break;
      case GgmlType.F16: slices.push(`f16x4(${p}_quants[i * 4u + ${j >> 1}u].${q[(j & 1) * 2]}, ${p}_quants[i * 4u + ${j >> 1}u].${q[(j & 1) * 2 + 1]})`); break;
      case GgmlType.Q8_0: slices.push(`u8x4(${j < 4 ? "q" : "q2"}.${q[j % 4]})`); break;
      case GgmlType.Q6_K: slices.push(`u6x4(${j < 4 ? "q" : "q2"}.${q[j % 4]})`); break;
      case GgmlType.Q4_0: case GgmlType.Q4_1: case GgmlType.Q4_K: slices.push(j < 4 ? `nib_lo(${word})` : `nib_hi(${word})`); break;
      default: slices.push(`${j < 4 ? "q5_lo" : "q5_hi"}(${word}, h, ${4 * j}u)`);
    }
  }
  return slices;
}

/** Loads of the planes a block needs, shared by the dot and value readers. */
function blockLoads(type: GgmlType, p: string): string {
  const lines: string[] = [];
  if (type === GgmlType.Q8_0 || type === GgmlType.Q6_K) lines.push(`let q = ${p}_quants[2u * i];`, `let q2 = ${p}_quants[2u * i + 1u];`);
  else if (type !== GgmlType.F32 && type !== GgmlType.F16) lines.push(`let q = ${p}_quants[i];`);
  if (weightPlanes(type).includes("meta")) lines.push(isK(type) ? `let md = ${p}_meta[i];` : `let md = unpack2x16float(${p}_meta[i]);`);
  if (weightPlanes(type).includes("high")) lines.push(`let h = ${p}_high[i];`);
  return lines.join(" ");
}

/** How a block's raw sum `s` (Σ q·x) and `xsum` (Σ x) become Σ w·x: the m and offset terms factor out of the dot. */
function scaleSum(type: GgmlType): string {
  switch (type) {
    case GgmlType.F32: case GgmlType.F16: return "s";
    case GgmlType.Q4_0: return "md.x * (s - 8.0 * xsum)";
    case GgmlType.Q5_0: return "md.x * (s - 16.0 * xsum)";
    case GgmlType.Q8_0: return "md.x * (s - 128.0 * xsum)";
    default: return "md.x * s + md.y * xsum";
  }
}

/**
 * `fn <p>_dot(i) -> f32`: Σ w·x over block i, with x in the private `xv` (8 vec4), its sum in `xsum` and the sums of
 * its two halves in `xhalf` (Q6_K has a scale per 16 weights).
 */
export function blockDotWgsl(type: GgmlType, p: string): string {
  const terms = rawSlices(type, p).map((slice, j) => `dot(${slice}, xv[${j}])`);
  if (type === GgmlType.Q6_K) {
    return `fn ${p}_dot(i: u32) -> f32 {
  ${blockLoads(type, p)}
  let s = vec2<f32>(${terms.slice(0, 4).join(" + ")},
    ${terms.slice(4).join(" + ")});
  return md.x * (s.x - 32.0 * xhalf.x) + md.y * (s.y - 32.0 * xhalf.y);
}`;
  }
  return `fn ${p}_dot(i: u32) -> f32 {
  ${blockLoads(type, p)}
  let s = ${terms.join("\n    + ")};
  return ${scaleSum(type)};
}`;
}

/** `fn <p>_values(i) -> array<vec4<f32>, 8>`: the 32 weights of block i as f32. */
export function blockValuesWgsl(type: GgmlType, p: string): string {
  const scale = (raw: string, j: number): string => {
    switch (type) {
      case GgmlType.Q6_K: return `md.${j < 4 ? "x" : "y"} * (${raw} - 32.0)`;
      case GgmlType.F32: case GgmlType.F16: return raw;
      case GgmlType.Q4_0: return `md.x * (${raw} - 8.0)`;
      case GgmlType.Q5_0: return `md.x * (${raw} - 16.0)`;
      case GgmlType.Q8_0: return `md.x * (${raw} - 128.0)`;
      default: return `md.x * ${raw} + md.y`;
    }
  };
  return `fn ${p}_values(i: u32) -> array<vec4<f32>, 8> {
  ${blockLoads(type, p)}
  return array<vec4<f32>, 8>(${rawSlices(type, p).map(scale).join(",\n    ")});
}`;
}
