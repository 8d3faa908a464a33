// The zero-loss assertion of the operator suites that run a LoadProducer
// through a roll, a scale or a decommission: every acknowledged id readable
// exactly once through the first Ready broker, and also through the other
// Ready brokers (reads that cross the cluster RPC). When ids are lost it says
// which broker acknowledged them and whether any broker can read them, so a
// failure report tells a missing record from a missing read path.
import { expect } from "vitest";
import {
  checkLedger,
  type HeaderSource,
  type LedgerReport,
  type LoadProducer,
  type PodInfo,
  readTopic,
} from "./load.ts";

export interface LedgerTarget {
  /** The brokers to read through (the Ready ones with an IP are used). */
  pods(): Promise<PodInfo[]>;
  topic: string;
  partitions: number;
  headers: HeaderSource;
  /** The prefix of the console.log lines ("scale-e2e"). */
  logPrefix: string;
  /** How long every acked id may take to become readable; checkLedger's default otherwise. */
  timeoutMs?: number;
  /** "all": every other Ready broker reads them all too; "second": only the second one. */
  throughOthers: "all" | "second";
}

/** Asserts none lost, none duplicated, none unknown (first broker) and none missing through the others; logs the ledger line. */
export async function expectEveryAckReadableOnce(
  producer: LoadProducer,
  t: LedgerTarget,
): Promise<LedgerReport> {
  const ips = (await t.pods()).filter((p) => p.ready && p.ip).map((p) => p.ip as string);
  const report = await checkLedger(producer, {
    ip: ips[0]!,
    topic: t.topic,
    partitions: t.partitions,
    headers: t.headers,
    ...(t.timeoutMs === undefined ? {} : { timeoutMs: t.timeoutMs }),
  });
  console.log(`${t.logPrefix}: ${report.line}`);
  if (report.lost.length > 0) {
    for (const id of report.lost.slice(0, 5)) {
      const via = producer.ackedVia.get(id);
      console.log(`${t.logPrefix}: lost ${id} was acknowledged by ${via?.ip} at ${via?.at}`);
    }
    for (const ip of ips) {
      const seen = await readTopic(ip, t.topic, t.partitions, t.headers);
      console.log(
        `${t.logPrefix}: lost ${report.lost.slice(0, 5).join(",")} via ${ip}: ${report.lost
          .slice(0, 5)
          .map((id) => seen?.has(id) ?? "unreadable")
          .join(",")}`,
      );
    }
  }
  expect(report.lost.slice(0, 10)).toEqual([]);
  expect(report.duplicated.slice(0, 10)).toEqual([]);
  expect(report.unknown.slice(0, 10)).toEqual([]);
  const others = t.throughOthers === "all" ? ips.slice(1) : [ips[1]!];
  for (const ip of others) {
    const other = await readTopic(ip, t.topic, t.partitions, t.headers);
    expect([...producer.acked].filter((id) => !other?.has(id))).toEqual([]);
  }
  return report;
}
