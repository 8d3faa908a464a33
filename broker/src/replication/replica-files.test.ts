import { crc32c } from "@node-rs/crc32";
import { describe, expect, it } from "vitest";
import { decodeCheckpoint, encodeCheckpoint, encodeEpochFile, loadEpochFile } from "./replica-files.ts";
import { classifyVolume, encodeVolumeId } from "./volume-id.ts";

const crc = (b: Buffer): number => crc32c(b);

describe("leader-epochs file", () => {
  it("round-trips a history and keeps entries below the log end", () => {
    const h = [
      { epoch: 0, startOffset: 0 },
      { epoch: 3, startOffset: 40 },
      { epoch: 5, startOffset: 90 },
    ];
    expect(loadEpochFile(encodeEpochFile(h), 100)).toEqual({ ok: true, history: h, dropped: 0 });
  });

  it("drops entries at or above the recovered log end (the epoch's first record was not durable)", () => {
    const raw = encodeEpochFile([
      { epoch: 0, startOffset: 0 },
      { epoch: 2, startOffset: 50 },
    ]);
    expect(loadEpochFile(raw, 50)).toEqual({ ok: true, history: [{ epoch: 0, startOffset: 0 }], dropped: 1 });
  });

  it("drops a torn last line (no newline) and refuses a damaged middle line", () => {
    expect(loadEpochFile(Buffer.from("0 0\n4 3"), 10)).toEqual({
      ok: true,
      history: [{ epoch: 0, startOffset: 0 }],
      dropped: 1,
    });
    const bad = loadEpochFile(Buffer.from("0 0\nx 3\n5 9\n"), 10);
    expect(bad.ok).toBe(false);
    expect(loadEpochFile(Buffer.from("3 10\n2 20\n"), 30).ok).toBe(false);
  });

  it("loads a missing file as an empty history", () => {
    expect(loadEpochFile(null, 7)).toEqual({ ok: true, history: [], dropped: 0 });
  });
});

describe("replica checkpoint", () => {
  it("round-trips, refuses a flipped byte and a truncated file", () => {
    const raw = encodeCheckpoint({ leaderEpoch: 7, hwm: 1234 }, crc);
    expect(decodeCheckpoint(raw, crc)).toEqual({ ok: true, checkpoint: { leaderEpoch: 7, hwm: 1234 } });
    const flipped = Buffer.from(raw);
    flipped[5] = flipped[5]! ^ 0x01;
    expect(decodeCheckpoint(flipped, crc).ok).toBe(false);
    expect(decodeCheckpoint(raw.subarray(0, raw.length - 3), crc).ok).toBe(false);
    expect(decodeCheckpoint(null, crc)).toEqual({ ok: true, checkpoint: null });
  });
});

describe("volume-id classification", () => {
  const self = { clusterUid: "c1", memberId: "narad-0" };
  const marker = encodeVolumeId({ uuid: "0b9f2a52-2b43-4a4e-9a55-0d4c1f1f7e11", ...self });

  it("own, missing, foreign by member, by cluster, and unparseable", () => {
    expect(classifyVolume(marker, self).kind).toBe("own");
    expect(classifyVolume(null, self)).toEqual({ kind: "missing" });
    const otherMember = classifyVolume(marker, { ...self, memberId: "narad-1" });
    expect(otherMember.kind).toBe("foreign");
    expect(otherMember.kind === "foreign" && otherMember.reason).toContain('member "narad-0"');
    expect(classifyVolume(marker, { ...self, clusterUid: "c2" }).kind).toBe("foreign");
    expect(classifyVolume(Buffer.from("{not json"), self)).toEqual({
      kind: "foreign",
      reason: "the volume-id marker does not parse",
      found: null,
    });
  });

  it("a marker from before the cluster uid was known is adopted; a broker without one judges only the member", () => {
    const legacy = encodeVolumeId({
      uuid: "0b9f2a52-2b43-4a4e-9a55-0d4c1f1f7e11",
      clusterUid: "",
      memberId: "narad-0",
    });
    expect(classifyVolume(legacy, self)).toEqual({
      kind: "own",
      identity: { uuid: "0b9f2a52-2b43-4a4e-9a55-0d4c1f1f7e11", clusterUid: "", memberId: "narad-0" },
      adopt: { uuid: "0b9f2a52-2b43-4a4e-9a55-0d4c1f1f7e11", clusterUid: "c1", memberId: "narad-0" },
    });
    expect(classifyVolume(legacy, { clusterUid: "", memberId: "narad-0" })).toMatchObject({ kind: "own" });
    expect(classifyVolume(legacy, { clusterUid: "", memberId: "narad-0" })).not.toHaveProperty("adopt");
    expect(classifyVolume(marker, { clusterUid: "", memberId: "narad-0" }).kind).toBe("own");
    expect(classifyVolume(legacy, { clusterUid: "c1", memberId: "narad-1" }).kind).toBe("foreign");
  });
});
