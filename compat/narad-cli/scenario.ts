// What a Narad user types, in order, against one broker with auth on (an
// `admin` root from the users file): each step is Narad's CLI arguments, the
// exit code and what the output must contain. run.ts executes it.

export interface CliStep {
  args: string[];
  exit: 0 | 1;
  prints: RegExp[];
  /** Credentials other than the admin's. */
  as?: { user: string; password: string };
  stdin?: string;
  /** `sub` streams until stopped: it runs for timeoutMs and its output is checked. */
  streams?: boolean;
  timeoutMs?: number;
  /** Asynchronous results (commit, fan-out copy, cursor start): retried for up to 15 s. */
  eventually?: boolean;
}

const alice = { user: "alice", password: "alice-secret-1" };

export function cliScenario(): CliStep[] {
  return [
    { args: ["topic", "add", "orders", "--partitions", "3"], exit: 0, prints: [/"name": "orders"/] },
    {
      args: ["topic", "add", "audit", "--parent", "orders"],
      exit: 0,
      prints: [/"role": "child"/, /"partitions": 3/],
    },
    { args: ["topic", "add", "later", "--partitions", "3"], exit: 0, prints: [/"role": "standalone"/] },
    {
      args: ["topic", "attach", "orders", "later", "--delay", "1m"],
      exit: 0,
      prints: [/"later"/, /"role": "parent"/],
    },
    {
      args: ["topic", "children", "orders"],
      exit: 0,
      prints: [/"name": "audit"/, /"delay_ms": 60000/, /"lag_complete": true/],
      eventually: true,
    },
    {
      args: ["topic", "ls"],
      exit: 0,
      prints: [/audit\s+3\s+\S+\s+child of orders/, /child of orders \(delay 1m0s\)/],
    },
    { args: ["pub", "orders", '{"n":1}', "--key", "k1"], exit: 0, prints: [/accepted/] },
    { args: ["pub", "orders", "--partition", "2"], stdin: '{"n":2}', exit: 0, prints: [/accepted/] },
    { args: ["pub", "orders", ""], exit: 1, prints: [/400|required|empty/i] },
    {
      args: ["replay", "orders", "--partition", "2", "--raw"],
      exit: 0,
      prints: [/\{"n":2\}/],
      eventually: true,
    },
    // The child re-keys copies: key k1 lands on the partition it hashes to (FNV-1a over 3: 0).
    {
      args: ["replay", "audit", "--partition", "0", "--raw"],
      exit: 0,
      prints: [/\{"n":1\}/],
      eventually: true,
    },
    {
      args: ["sub", "orders", "--peek", "--partition", "2", "--from", "0", "--raw"],
      exit: 0,
      prints: [/\{"n":2\}/],
      streams: true,
      timeoutMs: 4000,
    },
    {
      args: ["sub", "orders", "--raw"],
      exit: 0,
      prints: [/\{"n":1\}/, /\{"n":2\}/],
      streams: true,
      timeoutMs: 5000,
    },
    { args: ["topic", "info", "orders"], exit: 0, prints: [/"partition_stats"/, /"children"/] },
    // Narad's own bench: produce with 4 workers, then drain with consume + ack.
    { args: ["topic", "add", "benchq", "--partitions", "3"], exit: 0, prints: [/"name": "benchq"/] },
    {
      args: ["bench", "benchq", "--count", "300", "--size", "64", "--workers", "4", "--consume"],
      exit: 0,
      prints: [/produce: 300 ok, 0 failed/, /consume: 300 msgs/],
      timeoutMs: 60_000,
    },
    { args: ["pub", "benchq", '{"n":3}', "--count", "5"], exit: 0, prints: [/accepted/] },
    {
      args: ["server", "report"],
      exit: 0,
      prints: [
        /orders\s+3\s+2\s+\S+\s+1\s+parent/,
        /audit\s+3\s+\d+\s+\S+\s+1\s+child of orders/,
        /benchq\s+3\s+305\s/,
      ],
      eventually: true,
    },
    { args: ["topic", "edit", "orders", "--partitions", "6"], exit: 0, prints: [/"partitions": 6/] },
    { args: ["topic", "edit", "orders", "--partitions", "2"], exit: 1, prints: [/400|shrink|grow/i] },
    {
      args: ["user", "add", "alice", "--user-password", alice.password, "--grant", "produce:orders"],
      exit: 0,
      prints: [/"username": "alice"/, /"action": "produce"/],
    },
    { args: ["user", "ls"], exit: 0, prints: [/"username": "admin"/, /"username": "alice"/] },
    { args: ["pub", "orders", '{"by":"alice"}'], as: alice, exit: 0, prints: [/accepted/] },
    { args: ["pub", "later", '{"by":"alice"}'], as: alice, exit: 1, prints: [/403|may not produce/] },
    { args: ["topic", "rm", "orders", "--force"], as: alice, exit: 1, prints: [/403/] },
    {
      args: ["user", "grant", "alice", "--grant", "consume:orders"],
      exit: 0,
      prints: [/"action": "consume"/],
    },
    { args: ["pub", "orders", '{"by":"alice"}'], as: alice, exit: 1, prints: [/403|may not produce/] },
    { args: ["user", "rm", "alice"], exit: 0, prints: [] },
    {
      args: ["pub", "orders", '{"by":"alice"}'],
      as: alice,
      exit: 1,
      prints: [/401|unauthori[sz]ed|credentials/i],
    },
    { args: ["cluster", "members"], exit: 0, prints: [/"state": "Active"/, /"owned_partitions": \d+/] },
    { args: ["cluster", "moves"], exit: 0, prints: [/"moves": \[\]/] },
    { args: ["cluster", "decommission", "no-such-node"], exit: 1, prints: [/404|not found|unknown/i] },
    { args: ["topic", "detach", "orders", "audit"], exit: 0, prints: [] },
    { args: ["topic", "rm", "audit", "--force"], exit: 0, prints: [] },
    { args: ["topic", "rm", "orders", "--force"], exit: 0, prints: [] },
    { args: ["topic", "rm", "benchq", "--force"], exit: 0, prints: [] },
    { args: ["topic", "ls"], exit: 0, prints: [/later\s+3\s+\S+\s+-/] },
  ];
}
