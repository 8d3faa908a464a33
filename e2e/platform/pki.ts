// Certificates and keys for a throwaway control plane, made with the openssl
// CLI: one CA signs the apiserver's serving cert and one client cert per
// identity (client-cert auth via --client-ca-file), plus the RSA key pair that
// signs and verifies service-account tokens.
import { execFile } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

const OPENSSL = "openssl";
/** Service-account tokens are signed RS256, which needs an RSA key. */
const RSA_BITS = "2048";
const EC_CURVE = "P-256";
/** Long enough for a kept test cluster; these certs never leave the machine. */
const VALIDITY_DAYS = "3650";
/** First address of --service-cluster-ip-range=10.0.0.0/24: the `kubernetes` Service. */
export const KUBERNETES_SERVICE_IP = "10.0.0.1";

export interface Pki {
  dir: string;
  caCert: string;
  caKey: string;
  serverCert: string;
  serverKey: string;
  /** Service-account token signing key (private) and its public half for verification. */
  serviceAccountKey: string;
  serviceAccountPub: string;
}

export interface ClientIdentity {
  /** File stem under the PKI dir, e.g. "admin" gives admin.crt/admin.key. */
  name: string;
  /** Becomes the Kubernetes user name. */
  commonName: string;
  /** Become the Kubernetes groups. */
  organizations?: string[];
}

export interface ClientCert {
  cert: string;
  key: string;
}

async function openssl(args: string[], cwd: string): Promise<void> {
  try {
    await execFileAsync(OPENSSL, args, { cwd });
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`openssl ${args[0]} failed: ${stderr.trim() || String(error)}`);
  }
}

async function genRsaKey(path: string, cwd: string): Promise<void> {
  await openssl(
    ["genpkey", "-algorithm", "RSA", "-pkeyopt", `rsa_keygen_bits:${RSA_BITS}`, "-out", path],
    cwd,
  );
}

/** TLS keys are P-256: generating them takes milliseconds where RSA takes most of a second. */
async function genTlsKey(path: string, cwd: string): Promise<void> {
  await openssl(
    ["genpkey", "-algorithm", "EC", "-pkeyopt", `ec_paramgen_curve:${EC_CURVE}`, "-out", path],
    cwd,
  );
}

function subject(commonName: string, organizations: string[] = []): string {
  return `/CN=${commonName}` + organizations.map((o) => `/O=${o}`).join("");
}

/** Signs `name`.key's CSR with the CA, adding the extensions in `extensions`. */
async function signLeaf(pki: Pki, name: string, subj: string, extensions: string): Promise<ClientCert> {
  const key = join(pki.dir, `${name}.key`);
  const cert = join(pki.dir, `${name}.crt`);
  const csr = join(pki.dir, `${name}.csr`);
  const ext = join(pki.dir, `${name}.ext`);
  await genTlsKey(key, pki.dir);
  await openssl(["req", "-new", "-key", key, "-subj", subj, "-out", csr], pki.dir);
  await writeFile(ext, `[leaf]\n${extensions}\n`);
  await openssl(
    [
      "x509",
      "-req",
      "-in",
      csr,
      "-CA",
      pki.caCert,
      "-CAkey",
      pki.caKey,
      "-set_serial",
      randomSerial(),
      "-days",
      VALIDITY_DAYS,
      "-sha256",
      "-extfile",
      ext,
      "-extensions",
      "leaf",
      "-out",
      cert,
    ],
    pki.dir,
  );
  return { cert, key };
}

function randomSerial(): string {
  return "0x" + Buffer.from(crypto.getRandomValues(new Uint8Array(16))).toString("hex");
}

/** Creates the CA, the apiserver serving cert and the service-account key pair in `dir`. */
export async function createPki(dir: string, extraSans: string[] = []): Promise<Pki> {
  const pki: Pki = {
    dir,
    caCert: join(dir, "ca.crt"),
    caKey: join(dir, "ca.key"),
    serverCert: join(dir, "apiserver.crt"),
    serverKey: join(dir, "apiserver.key"),
    serviceAccountKey: join(dir, "sa.key"),
    serviceAccountPub: join(dir, "sa.pub"),
  };
  const caConfig = join(dir, "ca.cnf");
  await writeFile(
    caConfig,
    [
      "[req]",
      "distinguished_name = dn",
      "[dn]",
      "[ca]",
      "basicConstraints = critical, CA:TRUE",
      "keyUsage = critical, keyCertSign, cRLSign, digitalSignature",
      "subjectKeyIdentifier = hash",
      "",
    ].join("\n"),
  );
  const serviceAccountKeys = (async () => {
    await genRsaKey(pki.serviceAccountKey, dir);
    await openssl(["pkey", "-in", pki.serviceAccountKey, "-pubout", "-out", pki.serviceAccountPub], dir);
  })();
  await genTlsKey(pki.caKey, dir);
  await openssl(
    [
      "req",
      "-x509",
      "-new",
      "-key",
      pki.caKey,
      "-subj",
      "/CN=narad-local-ca",
      "-days",
      VALIDITY_DAYS,
      "-sha256",
      "-config",
      caConfig,
      "-extensions",
      "ca",
      "-out",
      pki.caCert,
    ],
    dir,
  );
  const dnsSans = [
    "localhost",
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
  ];
  const ipSans = ["127.0.0.1", KUBERNETES_SERVICE_IP];
  const sans = [...dnsSans.map((d) => `DNS:${d}`), ...ipSans.map((ip) => `IP:${ip}`), ...extraSans].join(
    ", ",
  );
  await signLeaf(
    pki,
    "apiserver",
    "/CN=kube-apiserver",
    [
      "basicConstraints = critical, CA:FALSE",
      "keyUsage = critical, digitalSignature, keyEncipherment",
      "extendedKeyUsage = serverAuth",
      `subjectAltName = ${sans}`,
    ].join("\n"),
  );
  await serviceAccountKeys;
  return pki;
}

/** Issues a client certificate; CN is the user name and each O a group. */
export async function issueClientCert(pki: Pki, identity: ClientIdentity): Promise<ClientCert> {
  return signLeaf(
    pki,
    identity.name,
    subject(identity.commonName, identity.organizations),
    [
      "basicConstraints = critical, CA:FALSE",
      "keyUsage = critical, digitalSignature, keyEncipherment",
      "extendedKeyUsage = clientAuth",
    ].join("\n"),
  );
}

export interface KubeconfigSpec {
  path: string;
  server: string;
  caCert: string;
  client: ClientCert;
  user: string;
  clusterName?: string;
}

/**
 * Writes a kubeconfig with the certificates embedded, so it stays valid when
 * copied and needs no relative paths resolved.
 */
export async function writeKubeconfig(spec: KubeconfigSpec): Promise<string> {
  const b64 = async (file: string) => (await readFile(file)).toString("base64");
  const cluster = spec.clusterName ?? "narad-local";
  const context = `${spec.user}@${cluster}`;
  // JSON is valid YAML and every kubeconfig reader accepts it.
  const config = {
    apiVersion: "v1",
    kind: "Config",
    clusters: [
      {
        name: cluster,
        cluster: { server: spec.server, "certificate-authority-data": await b64(spec.caCert) },
      },
    ],
    users: [
      {
        name: spec.user,
        user: {
          "client-certificate-data": await b64(spec.client.cert),
          "client-key-data": await b64(spec.client.key),
        },
      },
    ],
    contexts: [{ name: context, context: { cluster, user: spec.user, namespace: "default" } }],
    "current-context": context,
    preferences: {},
  };
  await writeFile(spec.path, JSON.stringify(config, null, 2) + "\n", { mode: 0o600 });
  return spec.path;
}
