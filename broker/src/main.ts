#!/usr/bin/env node
// `narad` command line: wiring only. Parses the command, loads the config,
// starts a broker and turns SIGTERM/SIGINT into a bounded drain. entry.ts
// (the image's and bin/narad.js's entry) calls runNarad; run directly, this
// file runs it itself.

import { hostname } from "node:os";
import { pino } from "pino";
import { armEarlyStop, releaseEarlyStop } from "../../packages/runtime/src/early-stop.ts";
import { ConfigError, loadConfig, serveFlags, usage } from "./config.ts";
import type { StartBrokerOptions } from "./node.ts";
import { NARAD_VERSION } from "./version.ts";

async function serve(argv: string[], startOptions: StartBrokerOptions): Promise<void> {
  // Until the drain handler below is on, a signal exits at once (early-stop.ts).
  armEarlyStop();
  const config = loadConfig(argv, process.env, hostname());
  const logger = pino({ level: config.logLevel, base: { node: config.nodeId } });
  // Loaded here, not at the top: the broker's modules take ~2 s to load, which the client commands skip.
  const { startBroker } = await import("./node.ts");
  const broker = await startBroker(config, logger, startOptions);
  logger.info(
    { http: broker.httpAddress, dataDir: config.dataDir, metastore: config.metastore, dev: config.dev },
    `narad ready on ${config.security.tlsDir === undefined ? "http" : "https"}://${broker.httpAddress}`,
  );
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      logger.warn({ signal }, "second signal: exiting without waiting for the drain");
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal, drainTimeoutMs: config.drainTimeoutMs }, "draining before exit");
    broker.shutdown().then(
      (drained) => {
        logger.info({ drained }, "stopped");
        logger.flush();
        process.exit(0);
      },
      (err: unknown) => {
        logger.error({ err }, "shutdown failed");
        logger.flush();
        process.exit(1);
      },
    );
  };
  process.on("SIGTERM", () => stop("SIGTERM"));
  process.on("SIGINT", () => stop("SIGINT"));
  releaseEarlyStop();
}

/** `narad serve --help` goes to the CLI, which prints the broker's flags. */
function startsBroker(command: string | undefined, rest: string[]): boolean {
  return command === "serve" && !rest.some((a) => a === "--help" || a === "-h");
}

const versionLine = `narad ${NARAD_VERSION} (node ${process.version})`;

async function main(argv: string[], startOptions: StartBrokerOptions): Promise<void> {
  const [command, ...rest] = argv;
  if (startsBroker(command, rest)) return serve(rest, startOptions);
  // Answered without loading the CLI (which loads the client: about a second).
  if (argv.length === 1 && (command === "--version" || command === "-V" || command === "version")) {
    process.stdout.write(`${versionLine}\n`);
    return;
  }
  // Every other command (topic, pub, help, completion, ...) is the client CLI,
  // loaded only now: a broker start never loads it (nor commander).
  const cli = await import("./cli/index.ts");
  return cli.main(argv, { usage, flags: serveFlags }, versionLine);
}

/**
 * Runs one `narad` command; a failure exits the process (2 for a usage
 * error). `startOptions` reach `serve`'s startBroker: only tests pass any
 * (broker/test/harness/faulty-serve.ts).
 */
export function runNarad(argv: string[], startOptions: StartBrokerOptions = {}): Promise<void> {
  return main(argv, startOptions).catch((err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`narad: ${err.message}\n\n${usage}`);
      process.exit(2);
    }
    process.stderr.write(`narad: ${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  });
}

if (import.meta.main) await runNarad(process.argv.slice(2));
