import { describe, expect, it } from "vitest";
import { parseSeekRequest, seekOffset } from "./group-seek.ts";

describe("parseSeekRequest", () => {
  it("earliest/latest default to every partition; an offset names one", () => {
    expect(parseSeekRequest({ to: "earliest" }, 3)).toEqual({
      target: { kind: "earliest" },
      partitions: [0, 1, 2],
    });
    expect(parseSeekRequest({ to: "latest", partition: 2 }, 3)).toEqual({
      target: { kind: "latest" },
      partitions: [2],
    });
    expect(parseSeekRequest({ offset: 0, partition: 0 }, 1)).toEqual({
      target: { kind: "offset", offset: 0 },
      partitions: [0],
    });
  });

  it("throws a 400 for each malformed body", () => {
    for (const body of [null, 7, [], {}, { to: "latest", offset: 1 }, { offset: 1 }, { to: "end" }, { x: 1 }])
      expect(() => parseSeekRequest(body, 2), JSON.stringify(body)).toThrow(
        expect.objectContaining({ code: "BAD_REQUEST" }),
      );
  });
});

describe("seekOffset", () => {
  const range = { oldestOffset: 10, highWatermark: 20 };
  it("earliest is the oldest retained record, latest the high watermark", () => {
    expect(seekOffset({ kind: "earliest" }, range)).toEqual({ ok: true, offset: 10 });
    expect(seekOffset({ kind: "latest" }, range)).toEqual({ ok: true, offset: 20 });
  });
  it("an offset below retention starts at the oldest record; up to the high watermark is taken as is", () => {
    expect(seekOffset({ kind: "offset", offset: 3 }, range)).toEqual({ ok: true, offset: 10 });
    expect(seekOffset({ kind: "offset", offset: 15 }, range)).toEqual({ ok: true, offset: 15 });
    expect(seekOffset({ kind: "offset", offset: 20 }, range)).toEqual({ ok: true, offset: 20 });
  });
  it("past the high watermark is refused with the reason", () => {
    expect(seekOffset({ kind: "offset", offset: 21 }, range)).toEqual({
      ok: false,
      reason: "offset 21 is past the partition's high watermark 20",
    });
  });
});
