// What a Producer or a Consumer needs from the NaradClient that made it. Declared
// on its own so producer.ts and consumer.ts do not import client.ts, which
// imports them (the client constructs both).

import type { Transport } from "./transport.ts";
import type { TopicInfo } from "./types.ts";

export interface ClientHandle {
  readonly transport: Transport;
  readonly topics: {
    get(name: string, opts?: { partition?: number }): Promise<TopicInfo>;
  };
}
