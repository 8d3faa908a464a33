// Usage text of the client commands (no imports: main.ts loads it eagerly).

export const cliCommandNames = [
  "topic",
  "group",
  "pub",
  "sub",
  "replay",
  "bench",
  "cluster",
  "context",
  "hash-password",
] as const;

export const cliUsage = `Usage: narad <command> [options]

Commands:
  serve ...                                 run a broker (see below)
  topic add <name> [--partitions N] [--retention-ms N] [--retention-bytes N]
                   [--visibility-timeout-ms N] [--max-in-flight N] [--max-acked-ahead N]
  topic ls | info <name> | rm <name>
  topic edit <name> [--partitions N] [--retention-ms N] [--retention-bytes N] [--max-in-flight N] [--max-acked-ahead N]
  group ls <topic> | describe <topic> <group> | rm <topic> <group>
                                            consumer groups: lag, in flight, per partition; rm forgets one
  pub <topic> [message] [--key K] [--partition N] [--file PATH]
                                            publish one message, or one per stdin line; --file: one
                                            message of the file's bytes as is (- for all of stdin)
  sub <topic> [--group G] [--peek] [--count N] [--idle-ms N] [--wait-ms N]
                                            consume and ack after printing; --peek nacks instead (nothing acked)
  replay <topic> --partition N [--offset N] [--limit N]
                                            read stored messages from an offset (no consumer state)
  bench [--messages N] [--size B] [--concurrency C] [--partitions P] [--batch-size N] [--topic T]
                                            produce load through the client; msg/s, p50/p99
  cluster status                            /admin/v1/status of every broker of the context
  context add <name> --url URL [--url URL...] [--user U --password P | --token T] [--ca FILE]
  context use <name> | ls | rm <name>
  hash-password [password]                  scrypt passwordHash for a users file (--auth-file); stdin if omitted

Global options:
  --url URL        broker url (repeat, or comma-separate, for several)  env NARAD_URL
  --context NAME   a named context from contexts.json (NARAD_CONFIG_DIR, default ~/.config/narad)
  --json           machine-readable output (one JSON document; NDJSON for sub and replay)
  --timeout-ms N   per request (default 10000)
  --user U --password P  Basic credentials (brokers with --auth on)  env NARAD_USER, NARAD_PASSWORD
  --token T        bearer token instead                             env NARAD_TOKEN
  --ca FILE        PEM CA to trust for https:// urls                env NARAD_CA
                   (without these, the context's credentials apply when the urls come from it)
  -h, --help       this text
  -V, --version    the version of narad (also: narad version)

Exit codes: 0 ok, 1 error (broker or network), 2 usage.
`;
