// The import-graph rules, checked in `npm test` (npm run check:imports).
// What they keep true is described in docs/architecture.md ("Import rules").

const io = [
  "^node:(fs|fs/promises|net|http|https|http2|child_process|dgram|dns|tls|worker_threads)$",
  "^(fs|net|http|https|child_process|dgram|dns|tls)$",
  "^fastify",
  "^@grpc/",
  "^@kubernetes/client-node",
  "^pino",
];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "no-circular",
      comment: "An import cycle means two modules are one: split out what both need.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "broker-not-into-operator",
      comment: "The broker and the operator share only packages/ (the API package above all).",
      severity: "error",
      from: { path: "^broker/" },
      to: { path: "^operator/" },
    },
    {
      name: "operator-not-into-broker",
      comment: "The operator talks to brokers over HTTP; shared code lives in packages/.",
      severity: "error",
      from: { path: "^operator/" },
      to: { path: "^broker/" },
    },
    {
      name: "rpc-not-into-http",
      comment:
        "The cluster RPC handlers and the HTTP routes share the service ports in broker/src/services.ts, not each other.",
      severity: "error",
      from: { path: "^broker/src/rpc/" },
      to: { path: "^broker/src/http/" },
    },
    {
      name: "dispatch-transport-behind-destinations",
      comment:
        "The dispatcher sees owners through the Destinations port (dispatch/types.ts); only its cluster adapter knows the RPC.",
      severity: "error",
      from: {
        path: "^broker/src/dispatch/",
        pathNot: "^broker/src/dispatch/cluster-destinations(\\.test)?\\.ts$",
      },
      to: { path: "^broker/src/rpc/" },
    },
    {
      name: "broker-constants-via-config",
      comment:
        "broker/src/constants.ts holds tunables: config.ts builds the Config from them and the composition root (node.ts, node/) wires the rest; every other module takes its values through its options. API names and limits are in api-contract.ts.",
      severity: "error",
      from: {
        pathNot: [
          "^broker/src/config\\.ts$",
          "^broker/src/node\\.ts$",
          "^broker/src/node/",
          "\\.test\\.ts$",
          "^broker/test/",
          "^broker/src/testing/",
        ],
      },
      to: { path: "^broker/src/constants\\.ts$" },
    },
    {
      name: "client-standalone",
      comment: "The published client depends on @narad/wire only.",
      severity: "error",
      from: { path: "^client/", pathNot: "^client/testing/" },
      to: { path: "^(broker|operator|e2e|sim)/" },
    },
    {
      name: "packages-standalone",
      comment: "packages/ are leaves: they import nothing of the applications.",
      severity: "error",
      from: { path: "^packages/", pathNot: "\\.test\\.ts$" },
      to: { path: "^(broker|operator|client|e2e|sim|bench|scripts)/" },
    },
    {
      name: "pure-layers-no-io",
      comment:
        "core/, replication/, plan/, specs/ and the API package decide; they do no I/O (types are fine).",
      severity: "error",
      from: {
        path: "^(broker/src/core|broker/src/replication|operator/src/plan|operator/src/specs|packages/api/src|packages/wire/src)/",
        pathNot: "\\.test\\.ts$",
      },
      to: { path: io, dependencyTypesNot: ["type-only"] },
    },
    {
      name: "no-test-code-in-production",
      comment: "Production modules never import tests or the test-only helpers.",
      severity: "error",
      from: {
        path: "^(broker/src|operator/src|client|packages)/",
        pathNot: [
          "\\.test\\.ts$",
          "/testing/",
          "^operator/src/controller/fake-kube\\.ts$",
          "^operator/src/broker-client/fake\\.ts$",
        ],
      },
      to: { path: ["\\.test\\.ts$", "^e2e/", "^client/testing/", "^broker/src/testing/", "^broker/test/"] },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|dist|\\.tmp)/|^compat/narad-e2e/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
