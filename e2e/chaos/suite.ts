// What the chaos suites on one NaradCluster (chaos, apiserver-down) share on
// top of the operator suites' setup (e2e/operator/suite.ts, which starts the
// platform, the operator, the cluster and the topic): the topic's copies as a
// broker reports them, and the ledger they end on: every acknowledged record
// read back (lost, stored twice, unknown) and delivered to the queue consumer.
import { setTimeout as sleep } from "node:timers/promises";
import {
  BROKER_PORT,
  checkLedger,
  type HeaderSource,
  type LedgerReport,
  type LoadProducer,
  type QueueConsumer,
} from "../operator/load.ts";

/** [replication_factor, min_insync_replicas] of a topic as the broker at `ip` reports them. */
export async function topicCopies(
  ip: string,
  topic: string,
  headers: HeaderSource,
): Promise<Array<number | undefined>> {
  const r = await fetch(`http://${ip}:${BROKER_PORT}/v1/topics/${encodeURIComponent(topic)}`, {
    headers: headers(),
  });
  const t = (await r.json()) as { replication_factor?: number; min_insync_replicas?: number };
  return [t.replication_factor, t.min_insync_replicas];
}

export interface ChaosLedger {
  /** What was read back through the broker at `ip`. */
  report: LedgerReport;
  /** Acknowledged ids the consumer never got. */
  undelivered: string[];
}

/**
 * Once the producer has stopped: waits up to `readTimeoutMs` for every
 * acknowledged record to be readable through `ip` and counts the ledger, then
 * up to `deliverTimeoutMs` for the consumer to have had every one of them
 * (leases of acks lost to a fault expire first), and stops the consumer.
 */
export async function ledgerAndDeliveries(
  producer: LoadProducer,
  consumer: QueueConsumer,
  o: {
    ip: string;
    topic: string;
    partitions: number;
    headers: HeaderSource;
    readTimeoutMs: number;
    deliverTimeoutMs: number;
  },
): Promise<ChaosLedger> {
  const report = await checkLedger(producer, {
    ip: o.ip,
    topic: o.topic,
    partitions: o.partitions,
    headers: o.headers,
    timeoutMs: o.readTimeoutMs,
  });
  const deadline = Date.now() + o.deliverTimeoutMs;
  const undelivered = () => [...producer.acked].filter((id) => !consumer.delivered.has(id));
  while (undelivered().length > 0 && Date.now() < deadline) await sleep(1000);
  await consumer.stop();
  return { report, undelivered: undelivered() };
}
