// Owns one pod (one UID) on this node: prepares its volumes and address, runs
// init containers then containers, restarts them per restartPolicy, runs
// probes, reports status, and carries out graceful deletion.
//
// All state changes funnel into `#sync()`, which is serialised: events
// (process exit, probe flip, pod update, backoff timer) only queue a sync.

import fs from "node:fs/promises";
import path from "node:path";
import {
  type CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
  type V1Container,
  type V1ContainerStatus,
  type V1Pod,
  type V1PodCondition,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import { ContainerProcess, type ExitInfo } from "./container-process.ts";
import { containerEnv, type EnvContext, expandVars, referencedObjects } from "./env.ts";
import { resolveImageCommand } from "./images.ts";
import type { IpAllocator } from "./ip-allocator.ts";
import { CONTAINER_MARKER_ENV, pidFilePath, podDir } from "./pids.ts";
import {
  type ContainerSnapshot,
  type ContainerState,
  type PodSnapshot,
  podStatus,
  statusPatchBody,
  type Terminated,
} from "./pod-status.ts";
import type { ProbeKind, ProbeResult } from "./probe-state.ts";
import { execInContainer, ProbeRunner, runProbeOnce } from "./probes.ts";
import {
  nextCrashCount,
  parseRestartPolicy,
  type RestartPolicy,
  restartDelayMs,
  shouldRestart,
  shouldRestartInit,
} from "./restart.ts";
import { PodVolumes } from "./volumes.ts";

/** How often to retry pod setup that is waiting on something (PVC binding, a missing ConfigMap). */
const SETUP_RETRY_MS = 1_000;
/** How often to retry a container whose image is not in the table (nothing will change, keep it cheap). */
const IMAGE_RETRY_MS = 10_000;
const STATUS_RETRY_MS = 1_000;
const DEFAULT_GRACE_S = 30;
/** Upper bound for an httpGet preStop request when the grace period is longer. */
const HTTP_HOOK_TIMEOUT_MS = 10_000;

export interface WorkerDeps {
  readonly core: CoreV1Api;
  readonly log: Logger;
  readonly stateDir: string;
  readonly repoRoot: string;
  readonly hostIP: string;
  readonly apiHost: string;
  readonly apiPort: string;
  readonly caPem: string;
  readonly ips: IpAllocator;
  readonly hostsFile: string | null;
}

interface ContainerRt {
  readonly spec: V1Container;
  readonly init: boolean;
  state: ContainerState;
  lastTerminated?: Terminated;
  restartCount: number;
  startedOnce: boolean;
  proc: ContainerProcess | null;
  env: Record<string, string>;
  crashes: number;
  nextStartAt: number;
  done: boolean;
  probes: Map<ProbeKind, ProbeRunner>;
}

function isNotFound(err: unknown): boolean {
  return (err as { code?: number }).code === 404;
}

function graceSeconds(pod: V1Pod): number {
  return (
    pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_S
  );
}

export class PodWorker {
  readonly uid: string;
  readonly #deps: WorkerDeps;
  readonly #log: Logger;
  #pod: V1Pod;
  readonly #restartPolicy: RestartPolicy;
  readonly #ns: string;
  readonly #name: string;
  readonly #dir: string;
  readonly #uidDir: string;
  readonly #startTime: Date;
  readonly #rts: ContainerRt[];
  #podIP: string | null = null;
  #volumes: PodVolumes | null = null;
  #prepared = false;
  /** Whether this worker started any process; if not, a deletion must not overwrite the API status. */
  #startedAny = false;
  #deleting = false;
  #stopped = false;
  #syncing = false;
  #again = false;
  #wakeTimer: NodeJS.Timeout | null = null;
  #wakeAt = Number.POSITIVE_INFINITY;
  #lastSent = "";
  #lastConditions: V1PodCondition[] | null = null;
  readonly finished: Promise<void>;
  #resolveFinished!: () => void;

  constructor(deps: WorkerDeps, pod: V1Pod) {
    this.#deps = deps;
    this.#pod = pod;
    this.uid = pod.metadata?.uid ?? "";
    this.#ns = pod.metadata?.namespace ?? "default";
    this.#name = pod.metadata?.name ?? "";
    this.#log = deps.log.child({ pod: `${this.#ns}/${this.#name}`, uid: this.uid });
    this.#restartPolicy = parseRestartPolicy(pod.spec?.restartPolicy);
    this.#dir = podDir(deps.stateDir, this.#ns, this.#name);
    this.#uidDir = path.join(this.#dir, `uid-${this.uid}`);
    this.#startTime = pod.status?.startTime ? new Date(pod.status.startTime) : new Date();
    this.finished = new Promise((r) => {
      this.#resolveFinished = r;
    });
    const prior = new Map<string, V1ContainerStatus>();
    for (const s of [
      ...(pod.status?.initContainerStatuses ?? []),
      ...(pod.status?.containerStatuses ?? []),
    ]) {
      prior.set(s.name, s);
    }
    const mk = (spec: V1Container, init: boolean): ContainerRt => {
      const p = prior.get(spec.name);
      return {
        spec,
        init,
        state: { kind: "waiting", reason: "ContainerCreating" },
        restartCount: p?.restartCount ?? 0,
        // After an agent restart the old process was killed as an orphan, so
        // starting again counts as a restart.
        startedOnce: p?.containerID !== undefined,
        proc: null,
        env: {},
        crashes: 0,
        nextStartAt: 0,
        done: false,
        probes: new Map(),
      };
    };
    // Re-claim the address a surviving pod already had (agent restart) now,
    // synchronously, before any new pod's worker can allocate it.
    const prevIP = pod.status?.podIP;
    if (prevIP && deps.ips.claim(prevIP)) this.#podIP = prevIP;
    this.#rts = [
      ...(pod.spec?.initContainers ?? []).map((c) => mk(c, true)),
      ...(pod.spec?.containers ?? []).map((c) => mk(c, false)),
    ];
  }

  start(): void {
    this.#queueSync();
  }

  update(pod: V1Pod): void {
    if (pod.metadata?.uid !== this.uid) return;
    this.#pod = pod;
    // Someone else rewrote our conditions (the node lifecycle controller
    // marks pods Ready=False when the node missed heartbeats, e.g. across an
    // API outage). Like the kubelet's status manager, reconcile against the
    // server's copy: forget what we last sent so the next report rewrites it.
    if (
      this.#lastConditions !== null &&
      conditionsDiffer(this.#lastConditions, pod.status?.conditions ?? [])
    ) {
      this.#lastSent = "";
      this.#lastConditions = pod.status?.conditions ?? [];
    }
    this.#queueSync();
  }

  /** The pod object is gone from the API (force delete): stop quickly, no API writes. */
  async forceStop(): Promise<void> {
    if (this.#stopped) return;
    this.#log.info("pod removed from API; stopping its processes");
    this.#deleting = true;
    await this.#stopAll(Math.min(graceSeconds(this.#pod), 2) * 1000, false);
    await this.#cleanup();
  }

  /** Agent shutdown: SIGTERM everything, wait up to graceMs, SIGKILL. No API writes. */
  async shutdown(graceMs: number): Promise<void> {
    if (this.#stopped) return;
    this.#deleting = true;
    await this.#stopAll(graceMs, false);
    this.#stopped = true;
    this.#clearWake();
    this.#volumes?.close();
    if (this.#podIP) this.#deps.ips.release(this.#podIP);
    this.#resolveFinished();
  }

  // ---- sync loop -------------------------------------------------------

  #queueSync(): void {
    if (this.#stopped) return;
    if (this.#syncing) {
      this.#again = true;
      return;
    }
    this.#syncing = true;
    void (async () => {
      do {
        this.#again = false;
        try {
          await this.#sync();
        } catch (err) {
          this.#log.error({ err }, "pod sync failed");
          this.#wake(Date.now() + SETUP_RETRY_MS);
        }
      } while (this.#again && !this.#stopped);
      this.#syncing = false;
    })();
  }

  #wake(at: number): void {
    if (this.#stopped || at >= this.#wakeAt) return;
    this.#clearWake();
    this.#wakeAt = at;
    this.#wakeTimer = setTimeout(
      () => {
        this.#wakeTimer = null;
        this.#wakeAt = Number.POSITIVE_INFINITY;
        this.#queueSync();
      },
      Math.max(0, at - Date.now()),
    );
  }

  #clearWake(): void {
    if (this.#wakeTimer) clearTimeout(this.#wakeTimer);
    this.#wakeTimer = null;
    this.#wakeAt = Number.POSITIVE_INFINITY;
  }

  async #sync(): Promise<void> {
    if (this.#stopped) return;
    if (this.#pod.metadata?.deletionTimestamp) {
      if (!this.#deleting) await this.#gracefulDelete();
      return;
    }
    if (this.#deleting) return;

    if (!this.#prepared) {
      const ok = await this.#prepare();
      if (!ok) {
        await this.#report();
        this.#wake(Date.now() + SETUP_RETRY_MS);
        return;
      }
    }

    const now = Date.now();
    let initsDone = true;
    for (const rt of this.#rts.filter((r) => r.init)) {
      if (rt.state.kind === "terminated" && rt.state.exitCode === 0) continue;
      initsDone = false;
      if (!rt.proc && !rt.done) await this.#maybeStart(rt, now);
      break;
    }
    if (initsDone) {
      for (const rt of this.#rts.filter((r) => !r.init)) {
        if (!rt.proc && !rt.done) await this.#maybeStart(rt, now);
      }
    }
    await this.#report();
  }

  async #maybeStart(rt: ContainerRt, now: number): Promise<void> {
    if (now < rt.nextStartAt) {
      this.#wake(rt.nextStartAt);
      return;
    }
    await this.#startContainer(rt);
  }

  async #prepare(): Promise<boolean> {
    this.#podIP ??= this.#deps.ips.allocate();
    await fs.mkdir(this.#uidDir, { recursive: true });
    this.#volumes ??= new PodVolumes(
      { core: this.#deps.core, caPem: this.#deps.caPem, log: this.#log, hostsFile: this.#deps.hostsFile },
      this.#pod,
      this.#uidDir,
    );
    const res = await this.#volumes.prepare(this.#podIP, this.#deps.hostIP);
    if (!res.ok) {
      this.#log.info({ reason: res.message }, "pod setup waiting");
      for (const rt of this.#rts) rt.state = { kind: "waiting", reason: res.reason, message: res.message };
      return false;
    }
    this.#prepared = true;
    return true;
  }

  async #fetchEnvContext(spec: V1Container): Promise<EnvContext> {
    const refs = referencedObjects(spec);
    const configMaps = new Map<string, Record<string, string>>();
    const secrets = new Map<string, Record<string, string>>();
    for (const name of refs.configMaps) {
      try {
        const cm = await this.#deps.core.readNamespacedConfigMap({ name, namespace: this.#ns });
        configMaps.set(name, cm.data ?? {});
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    for (const name of refs.secrets) {
      try {
        const s = await this.#deps.core.readNamespacedSecret({ name, namespace: this.#ns });
        const decoded: Record<string, string> = {};
        for (const [k, v] of Object.entries(s.data ?? {}))
          decoded[k] = Buffer.from(v, "base64").toString("utf8");
        secrets.set(name, decoded);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    return {
      podIP: this.#podIP ?? "",
      hostIP: this.#deps.hostIP,
      apiHost: this.#deps.apiHost,
      apiPort: this.#deps.apiPort,
      configMaps,
      secrets,
    };
  }

  async #startContainer(rt: ContainerRt): Promise<void> {
    const spec = rt.spec;
    const envRes = containerEnv(this.#pod, spec, await this.#fetchEnvContext(spec));
    if (!envRes.ok) {
      rt.state = { kind: "waiting", reason: "CreateContainerConfigError", message: envRes.message };
      rt.nextStartAt = Date.now() + SETUP_RETRY_MS;
      this.#wake(rt.nextStartAt);
      return;
    }
    const env = envRes.env;
    const command = spec.command?.map((s) => expandVars(s, env));
    const args = spec.args?.map((s) => expandVars(s, env));
    const resolved = resolveImageCommand(spec.image ?? "", command, args, this.#deps.repoRoot);
    if (!resolved.ok) {
      rt.state = { kind: "waiting", reason: "ErrImagePull", message: resolved.message };
      rt.nextStartAt = Date.now() + IMAGE_RETRY_MS;
      this.#wake(rt.nextStartAt);
      return;
    }
    const mountsOrErr = this.#volumes!.mountsFor(spec);
    if (typeof mountsOrErr === "string") {
      rt.state = { kind: "waiting", reason: "CreateContainerConfigError", message: mountsOrErr };
      rt.nextStartAt = Date.now() + SETUP_RETRY_MS;
      this.#wake(rt.nextStartAt);
      return;
    }
    const mounts = await this.#volumes!.classify(mountsOrErr);
    const processEnv: Record<string, string> = {
      PATH: process.env["PATH"] ?? "/usr/local/bin:/usr/bin:/bin",
      // The pod's own directory, as a container has its image's HOME: the
      // host's (its ~/.kube/config, say) must never leak into a pod (an
      // in-cluster client would load it instead of its service account).
      HOME: this.#dir,
      ...env,
      [CONTAINER_MARKER_ENV]: `${this.#ns}/${this.#name}/${spec.name}/${this.uid}`,
    };
    this.#startedAny = true;
    if (rt.startedOnce) rt.restartCount++;
    rt.startedOnce = true;
    rt.env = processEnv;
    const cwd = spec.workingDir || this.#dir;
    await fs.mkdir(cwd, { recursive: true });
    const proc = ContainerProcess.start({
      argv: resolved.argv,
      env: processEnv,
      cwd,
      mounts,
      logPath: path.join(this.#dir, `${spec.name}.log`),
      pidPath: pidFilePath(this.#deps.stateDir, this.#ns, this.#name, spec.name),
    });
    const containerId = `narad-agent://${this.uid.slice(0, 8)}-${spec.name}-${rt.restartCount}`;
    rt.proc = proc;
    rt.state = { kind: "running", startedAt: proc.startedAt, containerId };
    this.#log.info(
      { container: spec.name, pid: proc.pid, argv: resolved.argv, restartCount: rt.restartCount },
      "container started",
    );
    this.#startProbes(rt, proc);
    void proc.exited.then((info) => this.#onExit(rt, proc, containerId, info));
  }

  #startProbes(rt: ContainerRt, proc: ContainerProcess): void {
    const target = { podIP: this.#podIP ?? "", container: rt.spec, pid: proc.pid, env: rt.env };
    rt.probes = new Map();
    if (rt.init) return;
    const defs: Array<[ProbeKind, typeof rt.spec.readinessProbe]> = [
      ["startup", rt.spec.startupProbe],
      ["readiness", rt.spec.readinessProbe],
      ["liveness", rt.spec.livenessProbe],
    ];
    for (const [kind, probe] of defs) {
      if (!probe) continue;
      rt.probes.set(kind, new ProbeRunner(kind, probe, target, (r) => this.#onProbe(rt, proc, kind, r)));
    }
    // Readiness and liveness wait until the startup probe (if any) has passed.
    const startup = rt.probes.get("startup");
    if (startup) startup.start();
    else this.#startAfterStartup(rt);
  }

  #startAfterStartup(rt: ContainerRt): void {
    rt.probes.get("readiness")?.start();
    rt.probes.get("liveness")?.start();
  }

  #onProbe(rt: ContainerRt, proc: ContainerProcess, kind: ProbeKind, result: ProbeResult): void {
    if (rt.proc !== proc || this.#deleting) return;
    this.#log.info({ container: rt.spec.name, probe: kind, result }, "probe result changed");
    if (kind === "startup" && result === "success") this.#startAfterStartup(rt);
    if ((kind === "liveness" || kind === "startup") && result === "failure") {
      this.#log.warn({ container: rt.spec.name, probe: kind }, "probe failed; restarting container");
      void proc.stop((this.#pod.spec?.terminationGracePeriodSeconds ?? DEFAULT_GRACE_S) * 1000);
      return;
    }
    this.#queueSync();
  }

  #onExit(rt: ContainerRt, proc: ContainerProcess, containerId: string, info: ExitInfo): void {
    for (const p of rt.probes.values()) p.stop();
    if (rt.proc !== proc) return;
    rt.proc = null;
    const t: Terminated = {
      exitCode: info.exitCode,
      ...(info.signal !== undefined ? { signal: info.signal } : {}),
      reason: info.reason,
      ...(info.message ? { message: info.message } : {}),
      startedAt: proc.startedAt,
      finishedAt: info.finishedAt,
      containerId,
    };
    this.#log.info(
      { container: rt.spec.name, exitCode: info.exitCode, signal: info.signal },
      "container exited",
    );
    if (this.#deleting) {
      rt.state = { kind: "terminated", ...t };
      rt.done = true;
      return;
    }
    const restart = rt.init
      ? shouldRestartInit(this.#restartPolicy, info.exitCode)
      : shouldRestart(this.#restartPolicy, info.exitCode);
    if (restart) {
      rt.crashes = nextCrashCount(rt.crashes, info.finishedAt.getTime() - proc.startedAt.getTime());
      const delay = restartDelayMs(rt.crashes);
      rt.lastTerminated = t;
      rt.state = {
        kind: "waiting",
        reason: "CrashLoopBackOff",
        message: `back-off ${Math.round(delay / 1000)}s restarting failed container=${rt.spec.name}`,
      };
      rt.nextStartAt = Date.now() + delay;
      this.#wake(rt.nextStartAt);
    } else {
      rt.state = { kind: "terminated", ...t };
      rt.done = true;
    }
    this.#queueSync();
  }

  // ---- status ----------------------------------------------------------

  #snapshot(): PodSnapshot {
    const snap = (rt: ContainerRt): ContainerSnapshot => {
      const readiness = rt.probes.get("readiness");
      const startup = rt.probes.get("startup");
      const started = !startup || startup.result === "success";
      return {
        name: rt.spec.name,
        image: rt.spec.image ?? "",
        state: rt.state,
        ...(rt.lastTerminated ? { lastTerminated: rt.lastTerminated } : {}),
        restartCount: rt.restartCount,
        started,
        ready: started && (!readiness || readiness.result === "success"),
      };
    };
    const conds = this.#pod.status?.conditions ?? [];
    return {
      podIP: this.#podIP,
      hostIP: this.#deps.hostIP,
      startTime: this.#startTime,
      restartPolicy: this.#restartPolicy,
      initContainers: this.#rts.filter((r) => r.init).map(snap),
      containers: this.#rts.filter((r) => !r.init).map(snap),
      readinessGates: (this.#pod.spec?.readinessGates ?? []).map((g) => ({
        type: g.conditionType,
        status: conds.some((c) => c.type === g.conditionType && c.status === "True"),
      })),
      terminating: this.#deleting,
    };
  }

  async #report(): Promise<void> {
    const status = podStatus(
      this.#snapshot(),
      this.#lastConditions ?? this.#pod.status?.conditions ?? [],
      new Date(),
    );
    const body = JSON.stringify(status);
    if (body === this.#lastSent) return;
    try {
      await this.#deps.core.patchNamespacedPodStatus(
        { name: this.#name, namespace: this.#ns, body: statusPatchBody(status, this.uid) },
        setHeaderOptions("Content-Type", PatchStrategy.StrategicMergePatch),
      );
      this.#lastSent = body;
      this.#lastConditions = status.conditions ?? null;
    } catch (err) {
      if (isNotFound(err)) return;
      // 409 on the uid precondition: the pod of this name is another one now; not ours to report.
      if ((err as { code?: number }).code === 409) return;
      this.#log.warn({ err }, "status patch failed; will retry");
      this.#wake(Date.now() + STATUS_RETRY_MS);
    }
  }

  // ---- deletion --------------------------------------------------------

  async #runPreStop(rt: ContainerRt, proc: ContainerProcess, budgetMs: number): Promise<void> {
    const hook = rt.spec.lifecycle?.preStop;
    if (!hook || budgetMs <= 0) return;
    try {
      if (hook.exec?.command) {
        await execInContainer(hook.exec.command, proc.pid, rt.env, budgetMs);
      } else if (hook.httpGet) {
        await runProbeOnce(
          { httpGet: hook.httpGet },
          { podIP: this.#podIP ?? "", container: rt.spec, pid: proc.pid, env: rt.env },
          Math.min(budgetMs, HTTP_HOOK_TIMEOUT_MS),
        );
      } else if (hook.sleep?.seconds) {
        await new Promise((r) => setTimeout(r, Math.min(hook.sleep!.seconds * 1000, budgetMs)));
      }
    } catch (err) {
      this.#log.warn({ err, container: rt.spec.name }, "preStop hook failed");
    }
  }

  /** preStop, SIGTERM, wait out the remaining grace, SIGKILL — for every running container at once. */
  async #stopAll(graceMs: number, runHooks: boolean): Promise<void> {
    this.#clearWake();
    const deadline = Date.now() + graceMs;
    await Promise.all(
      this.#rts.map(async (rt) => {
        const proc = rt.proc;
        for (const p of rt.probes.values()) p.stop();
        if (!proc) {
          rt.done = true;
          return;
        }
        if (runHooks) await this.#runPreStop(rt, proc, deadline - Date.now());
        // #onExit was attached to `exited` first, so the terminated state is recorded when this resolves.
        await proc.stop(deadline - Date.now());
      }),
    );
  }

  async #gracefulDelete(): Promise<void> {
    this.#deleting = true;
    const grace = graceSeconds(this.#pod);
    this.#log.info({ graceSeconds: grace }, "pod deleted; stopping containers");
    await this.#stopAll(grace * 1000, true);
    if (this.#startedAny) await this.#report();
    try {
      await this.#deps.core.deleteNamespacedPod({
        name: this.#name,
        namespace: this.#ns,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid: this.uid } },
      });
      this.#log.info("pod object deleted");
    } catch (err) {
      const code = (err as { code?: number }).code;
      // 404: already gone; 409: the uid precondition failed, a successor exists.
      if (code !== 404 && code !== 409) this.#log.warn({ err }, "final pod delete failed");
    }
    await this.#cleanup();
  }

  async #cleanup(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#clearWake();
    this.#volumes?.close();
    if (this.#podIP) this.#deps.ips.release(this.#podIP);
    await fs.rm(this.#uidDir, { recursive: true, force: true }).catch(() => {});
    this.#resolveFinished();
  }
}

/** Whether the server's conditions disagree in status with the ones we last wrote. */
function conditionsDiffer(ours: readonly V1PodCondition[], server: readonly V1PodCondition[]): boolean {
  return ours.some((c) => server.find((x) => x.type === c.type)?.status !== c.status);
}
