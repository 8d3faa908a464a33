import { describe, expect, it } from "vitest";
import { type ClaimView, planStorage, quantityBytes } from "./storage.ts";

const claim = (
  name: string,
  request: string,
  capacity = request,
  over: Partial<ClaimView> = {},
): ClaimView => ({
  name,
  request,
  capacity,
  storageClassName: "fast",
  bound: true,
  conditions: [],
  ...over,
});
const expandable = [{ name: "fast", allowVolumeExpansion: true }];
const fixed = [{ name: "fast", allowVolumeExpansion: false }];

describe("quantityBytes", () => {
  it.each([
    ["1Gi", 2 ** 30],
    ["1.5Gi", 1.5 * 2 ** 30],
    ["500M", 5e8],
    ["2k", 2000],
    ["1e9", 1e9],
    ["1024", 1024],
    [" 10Gi ", 10 * 2 ** 30],
  ])("%s = %d bytes", (q, n) => expect(quantityBytes(q)).toBe(n));

  it.each(["", "Gi", "1GB", "-1Gi", "1.Gi", "abc"])("%j is malformed", (q) =>
    expect(quantityBytes(q)).toBeNaN(),
  );

  it("orders binary and decimal units", () => {
    expect(quantityBytes("1Gi") > quantityBytes("1G")).toBe(true);
    expect(quantityBytes("1024Mi")).toBe(quantityBytes("1Gi"));
  });
});

describe("planStorage", () => {
  it("is settled when every claim is at the size (in any unit)", () => {
    expect(
      planStorage({
        size: "1Gi",
        claims: [claim("data-a-0", "1024Mi"), claim("data-a-1", "1Gi")],
        classes: fixed,
      }),
    ).toEqual({ kind: "settled" });
  });

  it("is settled with no claims yet", () => {
    expect(planStorage({ size: "1Gi", claims: [], classes: [] })).toEqual({ kind: "settled" });
  });

  it("patches every bound claim below the size when the class allows expansion", () => {
    const p = planStorage({
      size: "2Gi",
      claims: [claim("data-a-1", "1Gi"), claim("data-a-0", "1Gi"), claim("data-a-2", "1Gi")],
      classes: expandable,
    });
    expect(p).toMatchObject({
      kind: "expanding",
      size: "2Gi",
      patch: ["data-a-0", "data-a-1", "data-a-2"],
      pending: ["data-a-0", "data-a-1", "data-a-2"],
    });
    if (p.kind === "expanding") expect(p.message).toContain("0/3 done");
  });

  it("waits for capacity after the request was raised, and names the resize state", () => {
    const p = planStorage({
      size: "2Gi",
      claims: [
        claim("data-a-0", "2Gi", "2Gi"),
        claim("data-a-1", "2Gi", "1Gi", { conditions: ["Resizing"] }),
        claim("data-a-2", "2Gi", "1Gi", { conditions: ["FileSystemResizePending"] }),
      ],
      classes: expandable,
    });
    expect(p).toMatchObject({ kind: "expanding", patch: [], pending: ["data-a-1", "data-a-2"] });
    if (p.kind === "expanding") {
      expect(p.message).toBe(
        "expanding volumes to 2Gi: 1/3 done; data-a-1: 1Gi (resizing), data-a-2: 1Gi (file system resize pending)",
      );
    }
  });

  it("does not patch an unbound claim, but waits for it", () => {
    const p = planStorage({
      size: "2Gi",
      claims: [claim("data-a-0", "1Gi"), claim("data-a-1", "1Gi", undefined, { bound: false })],
      classes: expandable,
    });
    expect(p).toMatchObject({ kind: "expanding", patch: ["data-a-0"], pending: ["data-a-0", "data-a-1"] });
    if (p.kind === "expanding") expect(p.message).toContain("data-a-1: not bound yet");
  });

  it("a new unbound claim already at the size is provisioning, not expanding", () => {
    const p = planStorage({
      size: "2Gi",
      claims: [claim("data-a-0", "2Gi"), claim("data-a-1", "2Gi", undefined, { bound: false })],
      classes: [],
    });
    expect(p).toEqual({ kind: "settled" });
  });

  it("sorts claims by ordinal, not as strings", () => {
    const claims = [10, 9, 2].map((i) => claim(`data-a-${i}`, "1Gi"));
    const p = planStorage({ size: "2Gi", claims, classes: expandable });
    expect(p.kind === "expanding" && p.patch).toEqual(["data-a-2", "data-a-9", "data-a-10"]);
  });

  it("refuses growth when the class does not allow expansion, naming the class; patches nothing", () => {
    const p = planStorage({ size: "2Gi", claims: [claim("data-a-0", "1Gi")], classes: fixed });
    expect(p).toEqual({
      kind: "refused",
      reason: "VolumeExpansionUnsupported",
      message:
        "cannot grow data-a-0 to 2Gi: StorageClass fast does not allow volume expansion (allowVolumeExpansion is not true); volumes are kept as they are",
    });
  });

  it("refuses growth when the class does not exist or the claim has none", () => {
    const missing = planStorage({ size: "2Gi", claims: [claim("data-a-0", "1Gi")], classes: [] });
    expect(missing).toMatchObject({ kind: "refused", reason: "VolumeExpansionUnsupported" });
    if (missing.kind === "refused") expect(missing.message).toContain("StorageClass fast not found");
    const none = planStorage({
      size: "2Gi",
      claims: [claim("data-a-0", "1Gi", "1Gi", { storageClassName: undefined })],
      classes: expandable,
    });
    if (none.kind === "refused") expect(none.message).toContain("a claim without a StorageClass");
    expect(none.kind).toBe("refused");
  });

  it("refuses a shrink (even when other claims could grow), listing the larger claims", () => {
    const p = planStorage({
      size: "2Gi",
      claims: [claim("data-a-0", "3Gi"), claim("data-a-1", "1Gi")],
      classes: expandable,
    });
    expect(p).toEqual({
      kind: "refused",
      reason: "VolumeShrinkUnsupported",
      message:
        "spec.storage.size 2Gi is smaller than existing volumes (data-a-0=3Gi); Kubernetes cannot shrink a PersistentVolumeClaim, volumes are kept as they are",
    });
  });

  it("a claim already above the size in capacity only (the provisioner rounded up) is not a shrink", () => {
    expect(planStorage({ size: "1Gi", claims: [claim("data-a-0", "1Gi", "2Gi")], classes: fixed })).toEqual({
      kind: "settled",
    });
  });

  it("refuses a malformed size", () => {
    expect(planStorage({ size: "big", claims: [], classes: [] })).toMatchObject({
      kind: "refused",
      reason: "InvalidStorageSize",
    });
  });
});
