/**
 * Weights live in a few large buffers ("arenas") and bind as ranges: buffer creation and first binding are
 * expensive in WebGPU, and fewer objects are easier to track (design §2.2).
 */
import { EngineError } from "../../../../errors/engine-error.js";

/** A 256-byte aligned range of an arena (256 = the strictest storage offset alignment among GPUs). */
export interface ArenaRange {
  buffer: GPUBuffer;
  offset: number;
  size: number;
}

const ALIGN = 256;

/** Packs uploads first-fit into arenas of `chunkBytes` (a larger item gets its own buffer). */
export class WeightArena {
  private readonly buffers: GPUBuffer[] = [];
  private current: GPUBuffer | undefined;
  private used = 0;

  constructor(
    private readonly device: GPUDevice,
    private readonly chunkBytes = 64 * 2 ** 20,
  ) {}

  /** Copies `data` into the arena and returns its range. */
  add(data: ArrayBufferView, label = "weights"): ArenaRange {
    const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
    if (size > this.device.limits.maxStorageBufferBindingSize) {
      throw new EngineError("invalid_request", `${label} needs ${size} bytes in one binding; this adapter binds at most ${this.device.limits.maxStorageBufferBindingSize}`);
    }
    const offset = Math.ceil(this.used / ALIGN) * ALIGN;
    if (!this.current || offset + size > this.current.size) return this.write(this.open(Math.max(size, this.chunkBytes)), 0, data, size);
    return this.write(this.current, offset, data, size);
  }

  /** The most bytes one range may hold (a storage binding's limit). */
  get maxBinding(): number {
    return this.device.limits.maxStorageBufferBindingSize;
  }

  /** Bytes reserved in all arenas. */
  get bytes(): number {
    return this.buffers.reduce((sum, b) => sum + b.size, 0);
  }

  destroy(): void {
    for (const buffer of this.buffers) buffer.destroy();
    this.buffers.length = 0;
    this.current = undefined;
  }

  private open(size: number): GPUBuffer {
    const buffer = this.device.createBuffer({ size, usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST, label: "weight-arena" });
    this.buffers.push(buffer);
    this.current = buffer;
    this.used = 0;
    return buffer;
  }

  private write(buffer: GPUBuffer, offset: number, data: ArrayBufferView, size: number): ArenaRange {
    // writeBuffer wants a multiple of 4 bytes; every plane is u32 or f32, so only odd test data would pad.
    this.device.queue.writeBuffer(buffer, offset, data.buffer, data.byteOffset, Math.ceil(data.byteLength / 4) * 4);
    this.used = offset + size;
    return { buffer, offset, size };
  }
}
