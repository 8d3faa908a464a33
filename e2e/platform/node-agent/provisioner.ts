// Dynamic provisioner for StorageClass provisioner `narad.dev/local-dir`:
// a PersistentVolume is a hostPath directory under <state-dir>/volumes.
// kcm's PV binder does the binding; this only creates PVs for pending claims,
// deletes Released ones, and grows capacity when a claim is expanded (the
// external-resizer's and the kubelet's part of a volume expansion).

import fs from "node:fs/promises";
import path from "node:path";
import {
  type CoreV1Api,
  PatchStrategy,
  type StorageV1Api,
  setHeaderOptions,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1StorageClass,
} from "@kubernetes/client-node";
import type { Logger } from "pino";

export const PROVISIONER_NAME = "narad.dev/local-dir";
export const DEFAULT_CLASS_NAME = "narad-local";
export const PROVISIONED_BY_ANNOTATION = "pv.kubernetes.io/provisioned-by";
const DEFAULT_CLASS_ANNOTATION = "storageclass.kubernetes.io/is-default-class";
/** The Event source of the resize stages a CSI external-resizer would run. */
const RESIZER = `external-resizer ${PROVISIONER_NAME}`;

/** PV name for a claim: deterministic, so two racing agents create the same object (one gets 409). */
export function pvNameFor(pvc: V1PersistentVolumeClaim): string {
  return `pvc-${pvc.metadata?.uid ?? ""}`;
}

export function isOurClass(sc: V1StorageClass | undefined): boolean {
  return sc?.provisioner === PROVISIONER_NAME;
}

export function isDefaultClass(sc: V1StorageClass): boolean {
  return sc.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] === "true";
}

/** Which class a claim uses, resolving "unset" to the default class (if one is ours). */
export function claimClassName(
  pvc: V1PersistentVolumeClaim,
  classes: readonly V1StorageClass[],
): string | undefined {
  const explicit = pvc.spec?.storageClassName;
  if (explicit !== undefined && explicit !== null) return explicit;
  return classes.find(isDefaultClass)?.metadata?.name;
}

export function needsProvisioning(pvc: V1PersistentVolumeClaim, cls: V1StorageClass | undefined): boolean {
  if (!isOurClass(cls)) return false;
  if (pvc.metadata?.deletionTimestamp) return false;
  if (pvc.spec?.volumeName) return false;
  return (pvc.status?.phase ?? "Pending") === "Pending";
}

/** The PV object for a claim (pure). */
export function buildPv(
  pvc: V1PersistentVolumeClaim,
  className: string,
  volumesRoot: string,
): V1PersistentVolume {
  const name = pvNameFor(pvc);
  return {
    apiVersion: "v1",
    kind: "PersistentVolume",
    metadata: { name, annotations: { [PROVISIONED_BY_ANNOTATION]: PROVISIONER_NAME } },
    spec: {
      capacity: { storage: pvc.spec?.resources?.requests?.["storage"] ?? "1Gi" },
      accessModes: pvc.spec?.accessModes ?? ["ReadWriteOnce"],
      persistentVolumeReclaimPolicy: "Delete",
      storageClassName: className,
      volumeMode: pvc.spec?.volumeMode ?? "Filesystem",
      hostPath: { path: path.join(volumesRoot, name), type: "DirectoryOrCreate" },
      claimRef: {
        apiVersion: "v1",
        kind: "PersistentVolumeClaim",
        namespace: pvc.metadata?.namespace,
        name: pvc.metadata?.name,
        uid: pvc.metadata?.uid,
      },
    },
  };
}

const BINARY_SUFFIX: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
};
const DECIMAL_SUFFIX: Record<string, number> = { k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, "": 1 };

/** Storage quantity → bytes, enough for size comparisons (binary and decimal suffixes). */
export function quantityBytes(q: string): number {
  const m = /^([0-9.]+)([A-Za-z]*)$/.exec(q.trim());
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  const suffix = m[2]!;
  const mult = BINARY_SUFFIX[suffix] ?? DECIMAL_SUFFIX[suffix];
  return mult === undefined ? Number.NaN : n * mult;
}

/**
 * Cheap pre-check before any API call: an unbound pending claim, or a bound
 * one whose request exceeds its capacity (resize). Everything else is settled.
 */
export function claimMayNeedWork(pvc: V1PersistentVolumeClaim): boolean {
  if (pvc.metadata?.deletionTimestamp) return false;
  if (!pvc.spec?.volumeName) return (pvc.status?.phase ?? "Pending") === "Pending";
  const want = pvc.spec.resources?.requests?.["storage"];
  const have = pvc.status?.capacity?.["storage"];
  return want !== undefined && have !== undefined && quantityBytes(want) > quantityBytes(have);
}

export class LocalDirProvisioner {
  readonly #core: CoreV1Api;
  readonly #storage: StorageV1Api;
  readonly #volumesRoot: string;
  readonly #log: Logger;
  readonly #busy = new Set<string>();

  constructor(core: CoreV1Api, storage: StorageV1Api, volumesRoot: string, log: Logger) {
    this.#core = core;
    this.#storage = storage;
    this.#volumesRoot = volumesRoot;
    this.#log = log.child({ component: "provisioner" });
  }

  /** Serialises work per object so repeated watch events do not race each other. */
  #once(key: string, fn: () => Promise<void>): void {
    if (this.#busy.has(key)) return;
    this.#busy.add(key);
    void fn()
      .catch((err: unknown) => this.#log.warn({ err, key }, "provisioner step failed"))
      .finally(() => this.#busy.delete(key));
  }

  onClaim(pvc: V1PersistentVolumeClaim): void {
    if (!claimMayNeedWork(pvc)) return;
    this.#once(`pvc/${pvc.metadata?.uid}`, () => this.#reconcileClaim(pvc));
  }

  onVolume(pv: V1PersistentVolume): void {
    if (pv.status?.phase !== "Released") return;
    this.#once(`pv/${pv.metadata?.name}`, () => this.#reconcileVolume(pv));
  }

  async #classes(): Promise<V1StorageClass[]> {
    return (await this.#storage.listStorageClass()).items;
  }

  async #reconcileClaim(pvc: V1PersistentVolumeClaim): Promise<void> {
    const classes = await this.#classes();
    const className = claimClassName(pvc, classes);
    const cls = classes.find((c) => c.metadata?.name === className);
    if (!className || !isOurClass(cls)) return;
    if (needsProvisioning(pvc, cls)) {
      const pv = buildPv(pvc, className, this.#volumesRoot);
      await fs.mkdir(pv.spec!.hostPath!.path, { recursive: true });
      try {
        await this.#core.createPersistentVolume({ body: pv });
        this.#log.info(
          { pvc: `${pvc.metadata?.namespace}/${pvc.metadata?.name}`, pv: pv.metadata?.name },
          "PV created",
        );
      } catch (err) {
        if ((err as { code?: number }).code !== 409) throw err;
      }
      return;
    }
    await this.#maybeExpand(pvc, cls!);
  }

  /**
   * Acts as the external resizer and then the kubelet, in the order and with
   * the PVC conditions, allocatedResourceStatuses and Events they produce
   * (controller expansion, then node/file-system expansion). A directory has
   * no size, so each stage is bookkeeping only; a claim of a class without
   * allowVolumeExpansion is never touched (the API server's admission
   * already refuses raising its request).
   */
  async #maybeExpand(pvc: V1PersistentVolumeClaim, cls: V1StorageClass): Promise<void> {
    if (!cls.allowVolumeExpansion || pvc.status?.phase !== "Bound" || !pvc.spec?.volumeName) return;
    const want = pvc.spec.resources?.requests?.["storage"];
    const have = pvc.status.capacity?.["storage"];
    if (!want || !have || !(quantityBytes(want) > quantityBytes(have))) return;
    const pvName = pvc.spec.volumeName;
    const pv = await this.#core.readPersistentVolume({ name: pvName });
    if (pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] !== PROVISIONER_NAME) return;
    const now = new Date().toISOString();
    // 1. external-resizer: controller expansion in progress
    await this.#claimStatus(pvc, {
      allocatedResources: { storage: want },
      allocatedResourceStatuses: { storage: "ControllerResizeInProgress" },
      conditions: [{ type: "Resizing", status: "True", lastTransitionTime: now }],
    });
    await this.#event(pvc, "Resizing", `External resizer is resizing volume ${pvName}`, RESIZER);
    await this.#core.patchPersistentVolume(
      { name: pvName, body: { spec: { capacity: { storage: want } } } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
    // 2. controller side done; the file system on the node still has to grow
    await this.#claimStatus(pvc, {
      allocatedResourceStatuses: { storage: "NodeResizePending" },
      conditions: [
        {
          type: "FileSystemResizePending",
          status: "True",
          lastTransitionTime: now,
          message: "Waiting for user to (re-)start a pod to finish file system resize of volume on node.",
        },
      ],
    });
    await this.#event(
      pvc,
      "FileSystemResizeRequired",
      "Require file system resize of volume on node",
      RESIZER,
    );
    // 3. kubelet: node expansion (online, the pod keeps running)
    await this.#claimStatus(pvc, {
      capacity: { storage: want },
      allocatedResourceStatuses: null,
      conditions: null,
    });
    await this.#event(
      pvc,
      "FileSystemResizeSuccessful",
      `MountVolume.NodeExpandVolume succeeded for volume "${pvName}"`,
      "kubelet",
    );
    this.#log.info(
      { pvc: `${pvc.metadata?.namespace}/${pvc.metadata?.name}`, from: have, to: want },
      "PVC expanded",
    );
  }

  async #claimStatus(pvc: V1PersistentVolumeClaim, status: Record<string, unknown>): Promise<void> {
    await this.#core.patchNamespacedPersistentVolumeClaimStatus(
      { name: pvc.metadata?.name ?? "", namespace: pvc.metadata?.namespace ?? "default", body: { status } },
      setHeaderOptions("Content-Type", PatchStrategy.MergePatch),
    );
  }

  /** A Normal Event on the claim, as the resizer and the kubelet record them. */
  async #event(
    pvc: V1PersistentVolumeClaim,
    reason: string,
    message: string,
    component: string,
  ): Promise<void> {
    const namespace = pvc.metadata?.namespace ?? "default";
    const now = new Date();
    try {
      await this.#core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { generateName: `${pvc.metadata?.name ?? "pvc"}.`, namespace },
          involvedObject: {
            apiVersion: "v1",
            kind: "PersistentVolumeClaim",
            name: pvc.metadata?.name,
            namespace,
            uid: pvc.metadata?.uid,
          },
          reason,
          message,
          type: "Normal",
          source: { component },
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (err) {
      this.#log.warn({ err, reason }, "could not record a PVC event");
    }
  }

  async #reconcileVolume(pv: V1PersistentVolume): Promise<void> {
    if (pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] !== PROVISIONER_NAME) return;
    if (pv.status?.phase !== "Released" || pv.spec?.persistentVolumeReclaimPolicy !== "Delete") return;
    const dir = pv.spec?.hostPath?.path;
    // Only ever remove directories that look like ours: <something>/volumes/<pv name>.
    if (dir && path.basename(dir) === pv.metadata?.name && path.basename(path.dirname(dir)) === "volumes") {
      await fs.rm(dir, { recursive: true, force: true });
    }
    try {
      await this.#core.deletePersistentVolume({ name: pv.metadata?.name ?? "" });
      this.#log.info({ pv: pv.metadata?.name }, "released PV deleted");
    } catch (err) {
      if ((err as { code?: number }).code !== 404) throw err;
    }
  }
}
