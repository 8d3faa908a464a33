import { describe, expect, it } from "vitest";
import {
  type ContainerSnapshot,
  type PodSnapshot,
  podPhase,
  podStatus,
  statusPatchBody,
} from "./pod-status.ts";

const T0 = new Date("2026-11-29T10:00:00Z");
const T1 = new Date("2026-11-29T10:01:00Z");

const running = (name: string, ready = true): ContainerSnapshot => ({
  name,
  image: "narad.test/echo",
  state: { kind: "running", startedAt: T0, containerId: `id-${name}` },
  restartCount: 0,
  ready,
  started: true,
});
const exited = (name: string, exitCode: number): ContainerSnapshot => ({
  name,
  image: "narad.test/echo",
  state: {
    kind: "terminated",
    exitCode,
    reason: exitCode === 0 ? "Completed" : "Error",
    startedAt: T0,
    finishedAt: T1,
    containerId: `id-${name}`,
  },
  restartCount: 0,
  ready: false,
  started: false,
});
const waiting = (name: string): ContainerSnapshot => ({
  name,
  image: "narad.test/echo",
  state: { kind: "waiting", reason: "ContainerCreating" },
  restartCount: 0,
  ready: false,
  started: false,
});

const pod = (over: Partial<PodSnapshot>): PodSnapshot => ({
  podIP: "127.5.0.2",
  hostIP: "127.5.0.1",
  startTime: T0,
  restartPolicy: "Always",
  initContainers: [],
  containers: [],
  readinessGates: [],
  terminating: false,
  ...over,
});

describe("podPhase", () => {
  it("is Pending until init containers succeed", () => {
    expect(podPhase(pod({ initContainers: [running("init")], containers: [waiting("c")] }))).toBe("Pending");
    expect(podPhase(pod({ initContainers: [exited("init", 0)], containers: [running("c")] }))).toBe(
      "Running",
    );
  });
  it("fails on a failed init container with restartPolicy Never", () => {
    expect(
      podPhase(pod({ restartPolicy: "Never", initContainers: [exited("i", 1)], containers: [waiting("c")] })),
    ).toBe("Failed");
  });
  it("derives terminal phases from the restart policy", () => {
    expect(podPhase(pod({ restartPolicy: "Never", containers: [exited("c", 0)] }))).toBe("Succeeded");
    expect(podPhase(pod({ restartPolicy: "Never", containers: [exited("c", 2)] }))).toBe("Failed");
    expect(podPhase(pod({ restartPolicy: "OnFailure", containers: [exited("c", 0)] }))).toBe("Succeeded");
    expect(podPhase(pod({ restartPolicy: "Always", containers: [exited("c", 0)] }))).toBe("Running");
  });
  it("counts a container waiting to restart as Running, not Pending", () => {
    const backoff: ContainerSnapshot = {
      ...waiting("c"),
      state: { kind: "waiting", reason: "CrashLoopBackOff" },
      lastTerminated: { exitCode: 137, reason: "Error", startedAt: T0, finishedAt: T1, containerId: "x" },
    };
    expect(podPhase(pod({ containers: [backoff] }))).toBe("Running");
  });
});

describe("podStatus", () => {
  it("is Ready only when every container is ready", () => {
    const s = podStatus(pod({ containers: [running("a"), running("b", false)] }), [], T1);
    const cond = Object.fromEntries((s.conditions ?? []).map((c) => [c.type, c.status]));
    expect(cond).toEqual({
      PodScheduled: "True",
      Initialized: "True",
      ContainersReady: "False",
      Ready: "False",
    });
    expect(s.containerStatuses?.map((c) => c.ready)).toEqual([true, false]);
    expect(s.podIP).toBe("127.5.0.2");
  });
  it("respects readiness gates", () => {
    const s = podStatus(
      pod({ containers: [running("a")], readinessGates: [{ type: "x", status: false }] }),
      [],
      T1,
    );
    expect(s.conditions?.find((c) => c.type === "Ready")?.status).toBe("False");
    expect(s.conditions?.find((c) => c.type === "ContainersReady")?.status).toBe("True");
  });
  it("keeps lastTransitionTime when a condition does not change", () => {
    const first = podStatus(pod({ containers: [running("a")] }), [], T0);
    const second = podStatus(pod({ containers: [running("a")] }), first.conditions ?? [], T1);
    expect(second.conditions?.find((c) => c.type === "Ready")?.lastTransitionTime).toEqual(T0);
  });
  it("reports lastState and the running state", () => {
    const c: ContainerSnapshot = {
      ...running("a"),
      restartCount: 1,
      lastTerminated: {
        exitCode: 137,
        signal: 9,
        reason: "Error",
        startedAt: T0,
        finishedAt: T1,
        containerId: "old",
      },
    };
    const s = podStatus(pod({ containers: [c] }), [], T1);
    const cs = s.containerStatuses?.[0];
    expect(cs?.restartCount).toBe(1);
    expect(cs?.state?.running?.startedAt).toEqual(T0);
    expect(cs?.lastState?.terminated?.exitCode).toBe(137);
    expect(cs?.containerID).toBe("id-a");
  });
});

describe("statusPatchBody", () => {
  it("nulls the container state keys that are not current", () => {
    const s = podStatus(pod({ containers: [running("a")] }), [], T1);
    const body = statusPatchBody(s) as {
      status: { containerStatuses: Array<{ state: Record<string, unknown> }> };
    };
    expect(body.status.containerStatuses[0]!.state).toMatchObject({ waiting: null, terminated: null });
    expect(body.status.containerStatuses[0]!.state["running"]).toEqual({ startedAt: T0 });
  });
  it("carries the pod's uid as a precondition when given, so a stale worker cannot write onto a successor", () => {
    const s = podStatus(pod({ containers: [running("a")] }), [], T1);
    expect(statusPatchBody(s, "uid-1").metadata).toEqual({ uid: "uid-1" });
    expect(statusPatchBody(s).metadata).toBeUndefined();
  });
});
