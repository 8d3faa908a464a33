import { Metadata, status } from "@grpc/grpc-js";
import { describe, expect, it } from "vitest";
import type { WalRecordInput } from "../core/records.ts";
import type { MemberView } from "../core/routing.ts";
import { fromRpcError } from "../rpc/status.ts";
import {
  createProduceForwarder,
  forwardTargets,
  fromIngestRecords,
  toIngestRecords,
} from "./produce-forward.ts";

const members: MemberView[] = [
  { id: "n0", address: "10.0.0.1:7942", state: "Active" },
  { id: "n1", address: "10.0.0.2:7942", state: "Maintenance" },
  { id: "n2", address: "10.0.0.3:7942", state: "Active" },
  { id: "n3", address: "10.0.0.4:7942", state: "Decommissioning" },
  { id: "n4", address: "10.0.0.5:7942", state: "Active", clusterAddress: "10.9.9.9:9000" },
];
const record: WalRecordInput = {
  topic: "t",
  key: Buffer.from("k"),
  partition: 2,
  createdMs: 1234,
  payload: Buffer.from("v"),
  topicUid: "uid-1",
};
/** A gRPC failure as a peer call surfaces it (NaradError with the ServiceError as cause). */
const rpcError = (code: status, details: string) =>
  fromRpcError(Object.assign(new Error(details), { code, details, metadata: new Metadata() }), "peer", 1);

describe("forwardTargets", () => {
  it("only Active peers other than this node, with their cluster addresses, rotated", () => {
    expect(forwardTargets(members, "n0", 0)).toEqual([
      { id: "n2", address: "10.0.0.3:7943" },
      { id: "n4", address: "10.9.9.9:9000" },
    ]);
    expect(forwardTargets(members, "n0", 1).map((t) => t.id)).toEqual(["n4", "n2"]);
    expect(forwardTargets(members, "n3", 3).map((t) => t.id)).toEqual(["n0", "n2", "n4"]);
    expect(forwardTargets([members[1]!], "n0", 0)).toEqual([]);
  });

  it("records cross the wire unchanged (partition and key chosen by the forwarding node)", () => {
    expect(fromIngestRecords(toIngestRecords([record]))).toEqual([record]);
    expect(
      fromIngestRecords(toIngestRecords([{ ...record, topicUid: undefined }]))[0]?.topicUid,
    ).toBeUndefined();
  });
});

describe("createProduceForwarder", () => {
  const run = (answers: Array<Error | undefined>) => {
    const calls: string[] = [];
    const forward = createProduceForwarder({
      nodeId: "n0",
      members: () => members,
      nowMs: () => 0,
      timeoutMs: 1000,
      ingest: async (address) => {
        calls.push(address);
        const a = answers.shift();
        if (a !== undefined) throw a;
        return 1;
      },
    });
    return { forward, calls };
  };

  it("stored by the first peer that fsyncs it", async () => {
    const { forward, calls } = run([undefined]);
    expect(await forward([record])).toEqual({ kind: "stored", via: "n2" });
    expect(calls).toEqual(["10.0.0.3:7943"]);
  });

  it("a peer that refused (stored nothing) or was never reached: the next one is tried", async () => {
    const { forward, calls } = run([
      rpcError(status.FAILED_PRECONDITION, "n2 refuses produce itself"),
      undefined,
    ]);
    expect(await forward([record])).toEqual({ kind: "stored", via: "n4" });
    expect(calls).toHaveLength(2);
    const never = run([
      rpcError(status.UNAVAILABLE, "connect ECONNREFUSED"),
      rpcError(status.UNAVAILABLE, "No connection established"),
    ]);
    const out = await never.forward([record]);
    expect(out.kind).toBe("refused");
  });

  it("a timeout or a dropped call is in doubt: no second peer (it would store the records twice)", async () => {
    for (const err of [
      rpcError(status.DEADLINE_EXCEEDED, "deadline exceeded"),
      rpcError(status.UNAVAILABLE, "Connection dropped"),
      rpcError(status.INTERNAL, "fsync failed"),
    ]) {
      const { forward, calls } = run([err, undefined]);
      expect(await forward([record])).toMatchObject({ kind: "inDoubt", via: "n2" });
      expect(calls).toHaveLength(1);
    }
  });

  it("no Active peer: refused at once", async () => {
    const forward = createProduceForwarder({
      nodeId: "n0",
      members: () => [members[0]!, members[1]!],
      nowMs: () => 0,
      timeoutMs: 1000,
      ingest: async () => {
        throw new Error("not called");
      },
    });
    expect(await forward([record])).toEqual({ kind: "refused", reason: "no Active peer to forward to" });
  });
});
