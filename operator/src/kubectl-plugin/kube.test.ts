// loadKubeConfig reads real kubeconfig files (in a temp dir): the flags and
// $KUBECONFIG as kubectl reads them.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { PluginError } from "./errors.ts";
import { loadKubeConfig } from "./kube.ts";
import { kubeconfigPaths, mergeKubeconfigs } from "./kubeconfig.ts";

const dir = mkdtempSync(join(tmpdir(), "kubectl-narad-kubeconfig-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfig(
  file: string,
  current: string,
  contexts: { name: string; namespace?: string; server: string }[],
) {
  const path = join(dir, file);
  const yaml = [
    "apiVersion: v1",
    "kind: Config",
    `current-context: "${current}"`,
    "clusters:",
    ...contexts.map(
      (c) => `- {name: ${c.name}, cluster: {server: "${c.server}", certificate-authority: ca.crt}}`,
    ),
    "users:",
    ...contexts.map((c) => `- {name: ${c.name}, user: {token: t-${c.name}}}`),
    "contexts:",
    ...contexts.map(
      (c) =>
        `- {name: ${c.name}, context: {cluster: ${c.name}, user: ${c.name}${c.namespace ? `, namespace: ${c.namespace}` : ""}}}`,
    ),
    "",
  ].join("\n");
  writeFileSync(path, yaml);
  return path;
}

const a = kubeconfig("a.yaml", "prod", [
  { name: "prod", namespace: "shop", server: "https://prod.example:6443" },
  { name: "dev", server: "https://dev-from-a.example:6443" },
]);
const b = kubeconfig("b.yaml", "dev", [
  { name: "dev", namespace: "team", server: "https://dev-from-b.example:6443" },
  { name: "lab", namespace: "lab-ns", server: "https://lab.example:6443" },
]);

describe("loadKubeConfig", () => {
  it("--kubeconfig: its current context and that context's namespace; -n wins; --context switches", () => {
    const plain = loadKubeConfig({ kubeconfig: a }, {});
    expect(plain.namespace).toBe("shop");
    expect(plain.kc.getCurrentCluster()?.server).toBe("https://prod.example:6443");
    expect(plain.kc.getCurrentCluster()?.caFile).toBe(join(dir, "ca.crt")); // relative to the file
    expect(loadKubeConfig({ kubeconfig: a, namespace: "x" }, {}).namespace).toBe("x");
    expect(loadKubeConfig({ kubeconfig: a, context: "dev" }, {}).namespace).toBe("default");
    expect(() => loadKubeConfig({ kubeconfig: join(dir, "absent.yaml") }, {})).toThrow(
      new RegExp(`^reading kubeconfig ${join(dir, "absent.yaml")}: ENOENT`),
    );
    expect(() => loadKubeConfig({ kubeconfig: a, context: "nope" }, {})).toThrow(
      new PluginError('context "nope" not found in the kubeconfig'),
    );
  });

  it("$KUBECONFIG: missing files skipped, the first file's names and current-context win", () => {
    const env = { KUBECONFIG: [join(dir, "missing.yaml"), a, "", b].join(delimiter) };
    const merged = loadKubeConfig({}, env);
    expect(merged.kc.getCurrentContext()).toBe("prod");
    expect(merged.namespace).toBe("shop");
    expect(merged.kc.getCluster("dev")?.server).toBe("https://dev-from-a.example:6443");
    const lab = loadKubeConfig({ context: "lab" }, env);
    expect(lab.namespace).toBe("lab-ns");
    expect(lab.kc.getCurrentUser()?.token).toBe("t-lab");
    // --kubeconfig beats $KUBECONFIG.
    expect(loadKubeConfig({ kubeconfig: b }, env).kc.getCurrentContext()).toBe("dev");
    expect(() => loadKubeConfig({}, { KUBECONFIG: join(dir, "missing.yaml") })).toThrow(
      /no file of KUBECONFIG exists/,
    );
  });
});

describe("mergeKubeconfigs", () => {
  it("first current-context set wins; the paths list drops empty entries", () => {
    const none = { clusters: [], users: [], contexts: [], currentContext: "" };
    expect(
      mergeKubeconfigs([none, { ...none, currentContext: "x" }, { ...none, currentContext: "y" }])
        .currentContext,
    ).toBe("x");
    expect(mergeKubeconfigs([]).currentContext).toBe("");
    expect(kubeconfigPaths("a::b:", ":")).toEqual(["a", "b"]);
  });
});
