/**
 * How kernels store and load the KV cache: f32, or f16 packed two per u32 with pack2x16float (half the memory,
 * and the rounding of llama.cpp's default F16 cache; needs no shader-f16).
 */

/** Element type of the KV cache. */
export type KvCacheType = "f32" | "f16";

/** Units a kernel moves at once: a RoPE pair (2 dims) or a quad (4 dims). */
type Unit = "pair" | "quad";

const ARRAY_TYPES: Record<KvCacheType, Record<Unit, string>> = {
  f32: { pair: "vec2<f32>", quad: "vec4<f32>" },
  f16: { pair: "u32", quad: "vec2<u32>" },
};

/** `var<storage>` declaration of a cache binding addressed in `unit`s. */
export function declareKvCache(binding: number, name: string, kv: KvCacheType, unit: Unit, access: "read" | "read_write"): string {
  return `@group(0) @binding(${binding}) var<storage, ${access}> ${name}: array<${ARRAY_TYPES[kv][unit]}>;`;
}

/** WGSL expression that converts an f32 `value` (vec2 or vec4 by `unit`) to its stored form. */
export function encodeKv(kv: KvCacheType, unit: Unit, value: string): string {
  if (kv === "f32") return value;
  return unit === "pair" ? `pack2x16float(${value})` : `vec2<u32>(pack2x16float((${value}).xy), pack2x16float((${value}).zw))`;
}

/** WGSL expression that loads quad `expr` of a cache as vec4<f32>. */
export function decodeKvQuad(kv: KvCacheType, expr: string): string {
  return kv === "f32" ? expr : `kv_quad(${expr})`;
}

/** Helper functions decodeKvQuad relies on (declare once per shader). */
export function kvHelpersWgsl(kv: KvCacheType): string {
  return kv === "f32" ? "" : "fn kv_quad(u: vec2<u32>) -> vec4<f32> { return vec4<f32>(unpack2x16float(u.x), unpack2x16float(u.y)); }";
}

/** Bytes one cached value takes. */
export function kvBytesPerValue(kv: KvCacheType): number {
  return kv === "f32" ? 4 : 2;
}
