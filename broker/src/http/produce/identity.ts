// The acks mode and the idempotent producer's identity of a produce request
// (the second step of pipeline.ts). The id must come from POST /v1/producers;
// this node refuses an epoch below the registry's (409 producer_fenced), or,
// when its view of the registry is older than the fence lease and the store
// cannot be read, decides nothing (503 producer_registry_stale). The sequence
// is checked by the owner (core/producer-sequence.ts), not here.

import { ProducerRegistryStaleError } from "../../producers/registry.ts";
import type { BrokerServices } from "../../services.ts";
import { type Acks, parseAcks } from "../produce-acks.ts";
import { type ProducerHeader, parseProducerHeaders } from "../producer-headers.ts";
import { producerVerdict } from "./decisions.ts";
import { CodedRefusal } from "./refusal.ts";

type Headers = Record<string, string | string[] | undefined>;

/** Parses the acks mode, then the producer headers; refuses a fenced or unknown identity. */
export async function identifyProducer(
  s: BrokerServices,
  headers: Headers,
  acksParam: unknown,
): Promise<{ producer: ProducerHeader | undefined; acks: Acks; acksGiven: boolean }> {
  const a = parseAcks(acksParam);
  if (!a.ok) throw new CodedRefusal(400, "invalid_acks", a.error);
  const h = parseProducerHeaders(headers);
  if (h === undefined) return { producer: undefined, acks: a.acks, acksGiven: a.given };
  if (a.acks !== "all") {
    throw new CodedRefusal(
      400,
      "acks_all_required",
      "an idempotent produce (narad-producer-* headers) needs acks=all: its answer is the owner's sequence check",
    );
  }
  // A miss (unknown id, or an epoch above the known one) re-reads the
  // registry first: the id or the bump may come from another broker a
  // moment ago. A lower epoch needs no read: epochs only grow. In cluster
  // mode a view older than the fence lease is re-read first as well (a
  // bump through another broker may not have reached it; docs/adr/0008);
  // when that read fails nothing is decided and nothing stored.
  let current: number | undefined;
  try {
    current = await s.producerRegistry?.lookup(h.id, h.epoch);
  } catch (err) {
    if (!(err instanceof ProducerRegistryStaleError)) throw err;
    s.metrics.produceRejected.inc({ reason: "producer_registry_stale" });
    throw new CodedRefusal(503, "producer_registry_stale", err.message, err.retryAfterSeconds ?? 1);
  }
  switch (producerVerdict(h.epoch, current)) {
    case "unknown_producer_id":
      throw new CodedRefusal(
        400,
        "unknown_producer_id",
        `producer id ${h.id} was not issued by this cluster; get one with POST /v1/producers`,
      );
    case "producer_fenced":
      s.metrics.produceRejected.inc({ reason: "producer_fenced" });
      throw new CodedRefusal(
        409,
        "producer_fenced",
        `producer fenced: epoch ${h.epoch} < ${current} for producer ${h.id}; a newer instance of this producer took over`,
      );
    case "invalid_producer_epoch":
      throw new CodedRefusal(
        400,
        "invalid_producer_epoch",
        `producer ${h.id} has epoch ${current}; epoch ${h.epoch} was never issued`,
      );
    case "ok":
      return { producer: h, acks: a.acks, acksGiven: true };
  }
}
