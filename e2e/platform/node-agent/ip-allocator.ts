// Pod address allocation inside 127.<prefix>.0.0/16 (pure, in memory).
//
// There is no CNI: every pod gets its own loopback address so that several
// pods can all listen on the same containerPort. 127.<p>.0.1 is the node's
// own address (hostIP); pods start at .0.2. The cursor only moves forward
// (wrapping at the end) so an address just released is not handed out again
// at once, while clients may still hold connections to the old pod.

const FIRST_HOST_OFFSET = 2;
const ADDRESSES_PER_PREFIX = 256 * 256;
const LAST_USABLE_OFFSET = ADDRESSES_PER_PREFIX - 2;

export function nodeIp(prefix: string): string {
  return `${prefix}.0.1`;
}

/** `prefix` is "127.N"; validates it so a typo cannot leave the loopback range. */
export function parsePodIpPrefix(prefix: string): string {
  const m = /^127\.(\d{1,3})$/.exec(prefix);
  if (!m || Number(m[1]) > 255)
    throw new Error(`--pod-ip-prefix must look like 127.N (0..255), got ${prefix}`);
  return prefix;
}

function offsetToIp(prefix: string, offset: number): string {
  return `${prefix}.${Math.floor(offset / 256)}.${offset % 256}`;
}

function ipToOffset(prefix: string, ip: string): number | null {
  if (!ip.startsWith(`${prefix}.`)) return null;
  const parts = ip.slice(prefix.length + 1).split(".");
  if (parts.length !== 2) return null;
  const [a, b] = parts.map(Number) as [number, number];
  if (!Number.isInteger(a) || !Number.isInteger(b) || a > 255 || b > 255) return null;
  return a * 256 + b;
}

export class IpAllocator {
  readonly #prefix: string;
  readonly #inUse = new Set<string>();
  #cursor = FIRST_HOST_OFFSET;

  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  /** Re-claims an address a pod already had (agent restart). False if taken or out of range. */
  claim(ip: string): boolean {
    const offset = ipToOffset(this.#prefix, ip);
    if (offset === null || offset < FIRST_HOST_OFFSET || offset > LAST_USABLE_OFFSET) return false;
    if (this.#inUse.has(ip)) return false;
    this.#inUse.add(ip);
    if (offset >= this.#cursor) this.#cursor = offset + 1;
    return true;
  }

  allocate(): string {
    const span = LAST_USABLE_OFFSET - FIRST_HOST_OFFSET + 1;
    for (let i = 0; i < span; i++) {
      if (this.#cursor > LAST_USABLE_OFFSET) this.#cursor = FIRST_HOST_OFFSET;
      const ip = offsetToIp(this.#prefix, this.#cursor);
      this.#cursor++;
      if (!this.#inUse.has(ip)) {
        this.#inUse.add(ip);
        return ip;
      }
    }
    throw new Error(`no free pod address in ${this.#prefix}.0.0/16`);
  }

  release(ip: string): void {
    this.#inUse.delete(ip);
  }
}
