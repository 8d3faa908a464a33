// Idempotent-producer headers of produce requests. Fencing uses the durable
// producer registry (broker/src/producers/registry.ts), not these headers.
//
//   narad-producer-id     1..64 chars of [A-Za-z0-9._-]
//   narad-producer-epoch  u32 (decimal)
//   narad-producer-seq    u53 (decimal): sequence of the request's first record
//                         for its partition; in a batch, the k-th record (from
//                         0) bound for partition P gets seq + k, counted per P.
//
// All three or none. The sequences are per partition (like Kafka), so a
// record's partition must not depend on the attempt: an idempotent record
// needs a key or an explicit partition (the client always pins it).

import { maxProducerEpoch, type ProducerStamp, producerIdPattern } from "../core/records.ts";
import { badRequest } from "../errors.ts";

export const producerHeaders = {
  id: "narad-producer-id",
  epoch: "narad-producer-epoch",
  seq: "narad-producer-seq",
} as const;

export interface ProducerHeader {
  id: string;
  epoch: number;
  /** Sequence of the first record (per partition). */
  seq: number;
}

type Headers = Record<string, string | string[] | undefined>;

function single(headers: Headers, name: string): string | undefined {
  const v = headers[name];
  if (Array.isArray(v)) throw badRequest(`${name} must be sent once`);
  return v;
}

/** The producer identity of a request, undefined for a plain produce; throws 400 when malformed. */
export function parseProducerHeaders(headers: Headers): ProducerHeader | undefined {
  const id = single(headers, producerHeaders.id);
  const epoch = single(headers, producerHeaders.epoch);
  const seq = single(headers, producerHeaders.seq);
  if (id === undefined && epoch === undefined && seq === undefined) return undefined;
  if (id === undefined || epoch === undefined || seq === undefined) {
    throw badRequest(
      `${producerHeaders.id}, ${producerHeaders.epoch} and ${producerHeaders.seq} must be sent together`,
    );
  }
  if (!producerIdPattern.test(id))
    throw badRequest(`${producerHeaders.id} must be 1-64 chars of [A-Za-z0-9._-]`);
  if (!/^\d{1,10}$/.test(epoch) || Number(epoch) > maxProducerEpoch) {
    throw badRequest(`${producerHeaders.epoch} must be an integer between 0 and ${maxProducerEpoch}`);
  }
  if (!/^\d{1,16}$/.test(seq) || !Number.isSafeInteger(Number(seq))) {
    throw badRequest(`${producerHeaders.seq} must be an integer between 0 and ${Number.MAX_SAFE_INTEGER}`);
  }
  return { id, epoch: Number(epoch), seq: Number(seq) };
}

/** Assigns per-partition sequences to a request's records, in order. */
export function stampRecords(h: ProducerHeader, partitions: readonly number[]): ProducerStamp[] {
  const next = new Map<number, number>();
  return partitions.map((p) => {
    const seq = next.get(p) ?? h.seq;
    next.set(p, seq + 1);
    if (!Number.isSafeInteger(seq)) throw badRequest(`${producerHeaders.seq} overflows`);
    return { id: h.id, epoch: h.epoch, seq };
  });
}
