// Slows down guessing: each address has a token bucket of refused authentications per minute;
// past it, lookups get 429. Keys known from memory never reach the throttle, so an honest client
// behind the same address keeps working.

/** Addresses remembered at once; past it the oldest are forgotten (they start again with a full budget). */
const MAX_ADDRESSES = 100_000;

interface Bucket {
  tokens: number;
  atMs: number;
}

export class RefusalThrottle {
  private readonly capacity: number;
  private readonly refillPerMs: number;
  private readonly buckets = new Map<string, Bucket>();

  /** perMinute 0: no bound. */
  constructor(perMinute: number) {
    this.capacity = perMinute;
    this.refillPerMs = perMinute / 60_000;
  }

  /** Takes a refusal ahead, so lookups in flight count too; 0 to go ahead, else seconds to wait. */
  admit(address: string, nowMs = Date.now()): number {
    if (this.capacity === 0) return 0;
    const bucket = this.bucketOf(address, nowMs);
    if (bucket.tokens < 1) return Math.max(1, Math.ceil((1 - bucket.tokens) / this.refillPerMs / 1000));
    bucket.tokens -= 1;
    return 0;
  }

  /** The lookup refused nothing (key usable, or database away): the refusal taken ahead is given back. */
  giveBack(address: string, nowMs = Date.now()): void {
    if (this.capacity > 0) this.bucketOf(address, nowMs).tokens += 1;
  }

  private bucketOf(address: string, nowMs: number): Bucket {
    let bucket = this.buckets.get(address);
    if (bucket) {
      bucket.tokens = this.refilled(bucket, nowMs);
      // Re-inserted, so the map's order is least recently used first.
      this.buckets.delete(address);
    } else {
      if (this.buckets.size >= MAX_ADDRESSES) this.buckets.delete(this.buckets.keys().next().value!);
      bucket = { tokens: this.capacity, atMs: nowMs };
    }
    bucket.atMs = nowMs;
    this.buckets.set(address, bucket);
    return bucket;
  }

  private refilled(bucket: Bucket, nowMs: number): number {
    return Math.min(this.capacity, bucket.tokens + (nowMs - bucket.atMs) * this.refillPerMs);
  }
}
