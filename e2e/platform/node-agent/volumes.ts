// Materialises a pod's volumes as host directories and says where each
// container's volumeMounts bind from. Runs once per pod start; service
// account tokens are refreshed on a timer until `close()`.

import fs from "node:fs/promises";
import path from "node:path";
import type {
  CoreV1Api,
  V1Container,
  V1DownwardAPIVolumeFile,
  V1KeyToPath,
  V1Pod,
  V1Volume,
} from "@kubernetes/client-node";
import type { Logger } from "pino";
import { fieldRefValue } from "./env.ts";
import { HOSTS_MOUNT_PATH } from "./hosts-file.ts";
import type { BindMount } from "./mount-script.ts";

export const SERVICE_ACCOUNT_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount";
const TOKEN_EXPIRATION_S = 3600;
/** Refresh at 80% of the lifetime, like the kubelet's token manager. */
const TOKEN_REFRESH_FRACTION = 0.8;
const DEFAULT_FILE_MODE = 0o644;

export interface VolumeDeps {
  readonly core: CoreV1Api;
  /** PEM of the API server's CA, written as ca.crt. */
  readonly caPem: string;
  readonly log: Logger;
  /** Shared hosts file bind-mounted at /etc/hosts (see hosts-file.ts), or null to leave /etc/hosts alone. */
  readonly hostsFile: string | null;
}

export type PrepareResult = { ok: true } | { ok: false; reason: string; message: string };

class NotReady extends Error {}

async function writeAtomic(file: string, content: string | Buffer, mode: number): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  await fs.writeFile(tmp, content, { mode });
  await fs.rename(tmp, file);
}

/** The Status message of an API error, not client-node's multi-line dump with headers. */
export function apiErrorMessage(err: unknown): string {
  const body = (err as { body?: unknown }).body;
  if (typeof body === "string") {
    try {
      const parsed = JSON.parse(body) as { message?: string };
      if (parsed.message) return parsed.message;
    } catch {
      // not JSON
    }
  }
  return err instanceof Error ? err.message.split("\n")[0]! : String(err);
}

function isNotFound(err: unknown): boolean {
  return (err as { code?: number }).code === 404;
}

export class PodVolumes {
  readonly #deps: VolumeDeps;
  readonly #pod: V1Pod;
  readonly #root: string;
  /** volume name → host directory (or file, for hostPath files). */
  readonly #sources = new Map<string, string>();
  #saDir: string | null = null;
  #refreshTimer: NodeJS.Timeout | null = null;
  #refreshers: Array<() => Promise<void>> = [];

  /** `root` is private to this pod UID, so a same-named successor starts with fresh emptyDirs. */
  constructor(deps: VolumeDeps, pod: V1Pod, root: string) {
    this.#deps = deps;
    this.#pod = pod;
    this.#root = root;
  }

  get #ns(): string {
    return this.#pod.metadata?.namespace ?? "default";
  }

  async prepare(podIP: string, hostIP: string): Promise<PrepareResult> {
    this.#refreshers = [];
    try {
      for (const v of this.#pod.spec?.volumes ?? []) {
        this.#sources.set(v.name, await this.#materialise(v, podIP, hostIP));
      }
      if (this.#pod.spec?.automountServiceAccountToken !== false && !this.#hasProjectedSaMount()) {
        const dir = path.join(this.#root, "serviceaccount");
        const write = async () => {
          await writeAtomic(path.join(dir, "token"), await this.#requestToken([], TOKEN_EXPIRATION_S), 0o600);
        };
        await write();
        await writeAtomic(path.join(dir, "ca.crt"), this.#deps.caPem, DEFAULT_FILE_MODE);
        await writeAtomic(path.join(dir, "namespace"), this.#ns, DEFAULT_FILE_MODE);
        this.#refreshers.push(write);
        this.#saDir = dir;
      }
    } catch (err) {
      if (err instanceof NotReady) return { ok: false, reason: "ContainerCreating", message: err.message };
      return {
        ok: false,
        reason: "ContainerCreating",
        message: `volume setup failed: ${apiErrorMessage(err)}`,
      };
    }
    this.#scheduleRefresh();
    return { ok: true };
  }

  /** Bind mounts for one container, or an error message if a mount names an unknown volume. */
  mountsFor(container: V1Container): BindMount[] | string {
    const mounts: BindMount[] = [];
    for (const vm of container.volumeMounts ?? []) {
      const src = this.#sources.get(vm.name);
      if (src === undefined) return `volume "${vm.name}" not found`;
      const source = vm.subPath ? path.join(src, vm.subPath) : src;
      mounts.push({ source, target: vm.mountPath, readOnly: vm.readOnly === true, isFile: false });
    }
    if (this.#deps.hostsFile && !mounts.some((m) => m.target === HOSTS_MOUNT_PATH)) {
      mounts.push({ source: this.#deps.hostsFile, target: HOSTS_MOUNT_PATH, readOnly: true, isFile: true });
    }
    if (this.#saDir && !mounts.some((m) => m.target === SERVICE_ACCOUNT_MOUNT_PATH)) {
      mounts.push({ source: this.#saDir, target: SERVICE_ACCOUNT_MOUNT_PATH, readOnly: true, isFile: false });
    }
    return mounts;
  }

  /** Resolves subPath mounts that point at files (the mount script needs to know). */
  async classify(mounts: BindMount[]): Promise<BindMount[]> {
    const out: BindMount[] = [];
    for (const m of mounts) {
      const st = await fs.stat(m.source).catch(() => null);
      if (!st) await fs.mkdir(m.source, { recursive: true });
      out.push({ ...m, isFile: st?.isFile() === true });
    }
    return out;
  }

  close(): void {
    if (this.#refreshTimer) clearTimeout(this.#refreshTimer);
    this.#refreshTimer = null;
  }

  #hasProjectedSaMount(): boolean {
    const all = [...(this.#pod.spec?.containers ?? []), ...(this.#pod.spec?.initContainers ?? [])];
    return all.some((c) => (c.volumeMounts ?? []).some((m) => m.mountPath === SERVICE_ACCOUNT_MOUNT_PATH));
  }

  #scheduleRefresh(): void {
    if (this.#refreshers.length === 0) return;
    const delay = TOKEN_EXPIRATION_S * 1000 * TOKEN_REFRESH_FRACTION;
    this.#refreshTimer = setTimeout(async () => {
      for (const r of this.#refreshers) {
        await r().catch((err: unknown) => this.#deps.log.warn({ err }, "token refresh failed"));
      }
      this.#scheduleRefresh();
    }, delay);
    this.#refreshTimer.unref();
  }

  async #requestToken(audiences: string[], expirationSeconds: number): Promise<string> {
    const md = this.#pod.metadata ?? {};
    const named = this.#pod.spec?.serviceAccountName || this.#pod.spec?.serviceAccount;
    const sa = named || "default";
    // The API server refuses to bind a token to a pod whose spec names a
    // different account, and with the ServiceAccount admission plugin off an
    // unset name stays "" rather than "default": then the token is unbound.
    const boundObjectRef = named ? { apiVersion: "v1", kind: "Pod", name: md.name, uid: md.uid } : undefined;
    try {
      const res = await this.#deps.core.createNamespacedServiceAccountToken({
        name: sa,
        namespace: this.#ns,
        body: { spec: { audiences, expirationSeconds, ...(boundObjectRef ? { boundObjectRef } : {}) } },
      });
      const token = res.status?.token;
      if (!token) throw new Error("TokenRequest returned no token");
      return token;
    } catch (err) {
      if (isNotFound(err)) throw new NotReady(`serviceaccount "${sa}" not found`);
      throw err;
    }
  }

  async #configMapData(name: string, optional: boolean): Promise<Map<string, Buffer> | null> {
    try {
      const cm = await this.#deps.core.readNamespacedConfigMap({ name, namespace: this.#ns });
      const m = new Map<string, Buffer>();
      for (const [k, v] of Object.entries(cm.data ?? {})) m.set(k, Buffer.from(v));
      for (const [k, v] of Object.entries(cm.binaryData ?? {})) m.set(k, Buffer.from(v, "base64"));
      return m;
    } catch (err) {
      if (isNotFound(err)) {
        if (optional) return null;
        throw new NotReady(`configmap "${name}" not found`);
      }
      throw err;
    }
  }

  async #secretData(name: string, optional: boolean): Promise<Map<string, Buffer> | null> {
    try {
      const s = await this.#deps.core.readNamespacedSecret({ name, namespace: this.#ns });
      const m = new Map<string, Buffer>();
      for (const [k, v] of Object.entries(s.data ?? {})) m.set(k, Buffer.from(v, "base64"));
      for (const [k, v] of Object.entries(s.stringData ?? {})) m.set(k, Buffer.from(v));
      return m;
    } catch (err) {
      if (isNotFound(err)) {
        if (optional) return null;
        throw new NotReady(`secret "${name}" not found`);
      }
      throw err;
    }
  }

  async #writeKeys(
    dir: string,
    data: Map<string, Buffer> | null,
    items: V1KeyToPath[] | undefined,
    mode: number,
  ): Promise<void> {
    if (!data) return;
    if (items && items.length > 0) {
      for (const it of items) {
        const v = data.get(it.key);
        if (v !== undefined) await writeAtomic(path.join(dir, it.path), v, it.mode ?? mode);
      }
      return;
    }
    for (const [k, v] of data) await writeAtomic(path.join(dir, k), v, mode);
  }

  async #writeDownward(
    dir: string,
    items: V1DownwardAPIVolumeFile[] | undefined,
    podIP: string,
    hostIP: string,
  ): Promise<void> {
    for (const it of items ?? []) {
      let value = "";
      if (it.fieldRef) {
        const fp = it.fieldRef.fieldPath;
        const md = this.#pod.metadata ?? {};
        if (fp === "metadata.labels" || fp === "metadata.annotations") {
          const m = (fp === "metadata.labels" ? md.labels : md.annotations) ?? {};
          value = Object.entries(m)
            .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
            .join("\n");
        } else {
          value = fieldRefValue(this.#pod, fp, podIP, hostIP) ?? "";
        }
      }
      await writeAtomic(path.join(dir, it.path), value, it.mode ?? DEFAULT_FILE_MODE);
    }
  }

  async #pvcPath(claimName: string): Promise<string> {
    let pvc: Awaited<ReturnType<CoreV1Api["readNamespacedPersistentVolumeClaim"]>>;
    try {
      pvc = await this.#deps.core.readNamespacedPersistentVolumeClaim({
        name: claimName,
        namespace: this.#ns,
      });
    } catch (err) {
      if (isNotFound(err)) throw new NotReady(`persistentvolumeclaim "${claimName}" not found`);
      throw err;
    }
    const pvName = pvc.spec?.volumeName;
    if (pvc.status?.phase !== "Bound" || !pvName) {
      throw new NotReady(`persistentvolumeclaim "${claimName}" is not bound yet`);
    }
    const pv = await this.#deps.core.readPersistentVolume({ name: pvName });
    const p = pv.spec?.hostPath?.path ?? pv.spec?.local?.path;
    if (!p) throw new NotReady(`persistentvolume "${pvName}" is neither hostPath nor local`);
    await fs.mkdir(p, { recursive: true });
    return p;
  }

  async #materialise(v: V1Volume, podIP: string, hostIP: string): Promise<string> {
    const dir = path.join(this.#root, "volumes", v.name);
    if (v.persistentVolumeClaim) return this.#pvcPath(v.persistentVolumeClaim.claimName);
    if (v.hostPath) {
      const t = v.hostPath.type ?? "";
      if (t === "DirectoryOrCreate" || t === "") await fs.mkdir(v.hostPath.path, { recursive: true });
      return v.hostPath.path;
    }
    if (v.emptyDir) {
      // Survives container restarts and agent restarts; removed with the pod's UID dir.
      await fs.mkdir(dir, { recursive: true });
      return dir;
    }
    // Rewrite from scratch each time the pod is prepared, so stale keys vanish.
    await fs.rm(dir, { recursive: true, force: true });
    await fs.mkdir(dir, { recursive: true });
    if (v.configMap) {
      const data = await this.#configMapData(v.configMap.name ?? "", v.configMap.optional === true);
      await this.#writeKeys(dir, data, v.configMap.items, v.configMap.defaultMode ?? DEFAULT_FILE_MODE);
      return dir;
    }
    if (v.secret) {
      const data = await this.#secretData(v.secret.secretName ?? "", v.secret.optional === true);
      await this.#writeKeys(dir, data, v.secret.items, v.secret.defaultMode ?? DEFAULT_FILE_MODE);
      return dir;
    }
    if (v.downwardAPI) {
      await this.#writeDownward(dir, v.downwardAPI.items, podIP, hostIP);
      return dir;
    }
    if (v.projected) {
      const mode = v.projected.defaultMode ?? DEFAULT_FILE_MODE;
      for (const src of v.projected.sources ?? []) {
        if (src.configMap) {
          const data = await this.#configMapData(src.configMap.name ?? "", src.configMap.optional === true);
          await this.#writeKeys(dir, data, src.configMap.items, mode);
        } else if (src.secret) {
          const data = await this.#secretData(src.secret.name ?? "", src.secret.optional === true);
          await this.#writeKeys(dir, data, src.secret.items, mode);
        } else if (src.downwardAPI) {
          await this.#writeDownward(dir, src.downwardAPI.items, podIP, hostIP);
        } else if (src.serviceAccountToken) {
          const tok = src.serviceAccountToken;
          const audiences = tok.audience ? [tok.audience] : [];
          const exp = tok.expirationSeconds ?? TOKEN_EXPIRATION_S;
          const write = async () => {
            await writeAtomic(path.join(dir, tok.path), await this.#requestToken(audiences, exp), 0o600);
          };
          await write();
          this.#refreshers.push(write);
        }
      }
      return dir;
    }
    this.#deps.log.warn({ volume: v.name }, "unsupported volume type; using an empty directory");
    return dir;
  }
}
