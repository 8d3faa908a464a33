// The cluster RPC shared secret with three in-process brokers on one
// in-memory metastore (as cluster.test.ts): nodes with the same secret
// commit and read each other's partitions; a node with a different secret
// is refused with UNAUTHENTICATED both ways (and the refusing node logs it);
// a call without the metadata is refused; fixing the odd node's secret file
// lets it in without a restart and its held produce arrives exactly once.

import { execFileSync } from "node:child_process";
import { copyFileSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { status } from "@grpc/grpc-js";
import { pino } from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { clusterRpcToken } from "../src/auth/cluster-secret.ts";
import { clusterAuthClientInterceptor } from "../src/rpc/auth.ts";
import {
  eventually as poll,
  req,
  type TestCluster,
  type TestNode,
  testClusters,
  testPeerPool,
} from "./harness/test-cluster.ts";

const logLines: Array<{ node: string; line: string }> = [];
// Warnings are captured per node: the test asserts which nodes logged the refusal.
const clusters = testClusters(afterAll, {
  prefix: "narad-auth-cluster",
  logger: (id) =>
    pino({ level: "warn" }, { write: (line: string) => void logLines.push({ node: id, line }) }),
});

const goodSecret = "the-cluster-shared-secret-0001";
const wrongSecret = "some-other-cluster-secret-0002";

type Node = TestNode & { secretFile: string };

/** A member whose cluster secret is read from a file of its own (rewritten to fix it, no restart). */
async function startNode(
  tc: TestCluster,
  id: string,
  secret: string,
  extraArgs: string[] = [],
): Promise<Node> {
  const secretFile = join(tc.tempDir(`narad-auth-cluster-${id}-secret`), "cluster-secret");
  writeFileSync(secretFile, secret);
  const node = await tc.start(id, { args: ["--cluster-secret-file", secretFile, ...extraArgs] });
  return { ...node, secretFile };
}

const eventually = (what: string, timeoutMs: number, check: () => Promise<boolean>) =>
  poll(what, timeoutMs, check, 50);

/** Ids of the messages in one partition, read through `via` (owner-routed over the RPC). */
async function readPartition(
  via: Node,
  topic: string,
  partition: number,
): Promise<{ status: number; ids: number[]; text: string }> {
  const r = await req(via, "GET", `/v1/topics/${topic}/records?partition=${partition}&offset=0`);
  if (r.status !== 200) return { status: r.status, ids: [], text: r.text };
  return {
    status: 200,
    ids: (r.json().records as Array<{ payload: { id: number } }>).map((m) => m.payload.id),
    text: r.text,
  };
}

function peerPool(interceptors = [] as ReturnType<typeof clusterAuthClientInterceptor>[]) {
  return testPeerPool({ defaultDeadlineMs: 10_000, interceptors });
}

describe("cluster RPC shared secret", () => {
  it("matching secrets work, a different secret is refused with UNAUTHENTICATED, a fixed secret file applies without restart", async () => {
    const tc = clusters.create();
    const { mc } = tc;
    const a = await startNode(tc, "a", goodSecret);
    const b = await startNode(tc, "b", goodSecret);
    const c = await startNode(tc, "c", wrongSecret);
    expect((await req(a, "POST", "/v1/topics", { name: "t", partitions: 3 })).status).toBe(201);
    const owners = mc.owners("t");
    const pOf = (id: string) => owners.indexOf(id);
    expect(new Set(owners)).toEqual(new Set(["a", "b", "c"]));

    // a and b share the secret: a produce through a to b's partition lands there, and reads cross over.
    expect(
      (await req(a, "POST", `/v1/topics/t/produce?partition=${pOf("b")}`, JSON.stringify({ id: 1 }))).status,
    ).toBe(202);
    await eventually("a→b commit", 30_000, async () =>
      (await readPartition(b, "t", pOf("b"))).ids.includes(1),
    );
    expect((await readPartition(a, "t", pOf("b"))).ids).toEqual([1]);

    // c's secret differs: a's read of c's partition is refused, and so is c's read of a's.
    const refused = await readPartition(a, "t", pOf("c"));
    expect(refused.status).toBe(503);
    expect(refused.text).toMatch(/cluster RPC refused/);
    expect((await readPartition(c, "t", pOf("a"))).status).toBe(503);
    // c's produce to a's partition is accepted into c's WAL but cannot be committed at a.
    expect(
      (await req(c, "POST", `/v1/topics/t/produce?partition=${pOf("a")}`, JSON.stringify({ id: 2 }))).status,
    ).toBe(202);
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await readPartition(a, "t", pOf("a"))).ids).toEqual([]);
    const unauthLogs = logLines.filter((l) => l.line.includes("UNAUTHENTICATED"));
    expect(new Set(unauthLogs.map((l) => l.node))).toEqual(new Set(["a", "c"]));

    // Without the metadata, or with a wrong value: UNAUTHENTICATED before any handler runs.
    const address = a.broker.cluster!.address;
    for (const pool of [
      peerPool(),
      peerPool([clusterAuthClientInterceptor(() => clusterRpcToken(wrongSecret))]),
    ]) {
      const err = await pool
        .peer(address)
        .adminStatus()
        .then(
          () => undefined,
          (e: unknown) => e as { cause?: { code?: number } },
        );
      // The re-init barrier's call too: no peer without the secret can touch a member's producer view.
      const confirmErr = await pool
        .peer(address)
        .confirmProducerEpoch({ producer_id: "p-1", epoch: 1, from_node: "x" }, Date.now() + 5_000)
        .then(
          () => undefined,
          (e: unknown) => e as { cause?: { code?: number } },
        );
      pool.close();
      expect(err?.cause?.code).toBe(status.UNAUTHENTICATED);
      expect(confirmErr?.cause?.code).toBe(status.UNAUTHENTICATED);
    }
    const good = peerPool([clusterAuthClientInterceptor(() => clusterRpcToken(goodSecret))]);
    expect((await good.peer(address).adminStatus()).node_id).toBe("a");
    good.close();

    // Fix c's secret file: within a few polls c is let in both ways; its held record arrives once.
    const fixedAt = Date.now();
    writeFileSync(c.secretFile, goodSecret);
    await eventually("c's held produce committed at a", 30_000, async () =>
      (await readPartition(a, "t", pOf("a"))).ids.includes(2),
    );
    process.stdout.write(`cluster secret reload let c in after ${Date.now() - fixedAt} ms\n`);
    expect((await readPartition(a, "t", pOf("a"))).ids).toEqual([2]);
    expect((await readPartition(a, "t", pOf("c"))).status).toBe(200);
  }, 120_000);

  it("mutual TLS (--cluster-tls-dir): members with certificates from the cluster CA talk; one from another CA is refused", async () => {
    const tc = clusters.create();
    const { mc } = tc;
    const certDir = tc.tempDir("narad-cluster-tls");
    const openssl = (...args: string[]) =>
      execFileSync("openssl", args, { cwd: certDir, stdio: ["ignore", "ignore", "pipe"] });
    const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    for (const ca of ["ca-good", "ca-other"])
      openssl(
        "req",
        "-x509",
        ...ec,
        "-keyout",
        `${ca}.key`,
        "-out",
        `${ca}.crt`,
        "-days",
        "1",
        "-subj",
        `/CN=${ca}`,
      );
    /** A node's TLS dir: ca.crt is always the cluster CA; its own certificate comes from `issuer`. */
    const nodeDir = (id: string, issuer: string): string => {
      openssl("req", ...ec, "-keyout", `${id}.key`, "-out", `${id}.csr`, "-subj", `/CN=${id}`);
      openssl(
        "x509",
        "-req",
        "-in",
        `${id}.csr`,
        "-CA",
        `${issuer}.crt`,
        "-CAkey",
        `${issuer}.key`,
        "-CAcreateserial",
        "-out",
        `${id}.crt`,
        "-days",
        "1",
      );
      const d = join(certDir, id);
      mkdirSync(d);
      copyFileSync(join(certDir, "ca-good.crt"), join(d, "ca.crt"));
      copyFileSync(join(certDir, `${id}.crt`), join(d, "tls.crt"));
      copyFileSync(join(certDir, `${id}.key`), join(d, "tls.key"));
      return d;
    };
    const a = await startNode(tc, "a", goodSecret, ["--cluster-tls-dir", nodeDir("a", "ca-good")]);
    const b = await startNode(tc, "b", goodSecret, ["--cluster-tls-dir", nodeDir("b", "ca-good")]);
    const c = await startNode(tc, "c", goodSecret, ["--cluster-tls-dir", nodeDir("c", "ca-other")]);
    expect((await req(a, "POST", "/v1/topics", { name: "m", partitions: 3 })).status).toBe(201);
    const owners = mc.owners("m");
    const pOf = (id: string) => owners.indexOf(id);
    expect(
      (await req(a, "POST", `/v1/topics/m/produce?partition=${pOf("b")}`, JSON.stringify({ id: 7 }))).status,
    ).toBe(202);
    await eventually("a→b commit over mTLS", 30_000, async () =>
      (await readPartition(b, "m", pOf("b"))).ids.includes(7),
    );
    expect((await readPartition(a, "m", pOf("b"))).ids).toEqual([7]);
    // c's certificate is not from the cluster CA: a refuses it, so reads both ways fail.
    expect((await readPartition(a, "m", pOf("c"))).status).toBe(503);
    expect((await readPartition(c, "m", pOf("a"))).status).toBe(503);
    // A plaintext client (with the right secret) gets nowhere either.
    const plain = peerPool([clusterAuthClientInterceptor(() => clusterRpcToken(goodSecret))]);
    const err = await plain
      .peer(a.broker.cluster!.address)
      .adminStatus()
      .then(
        () => undefined,
        (e: unknown) => e as Error,
      );
    plain.close();
    expect(err).toBeInstanceOf(Error);
  }, 120_000);
});
