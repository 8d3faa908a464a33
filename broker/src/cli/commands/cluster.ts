// `narad cluster status`: /admin/v1/status of every broker url.

import type { Command, CommandGroup } from "../args.ts";
import { table } from "../format.ts";
import { positionals } from "./shared.ts";

const status: Command = {
  summary: "/admin/v1/status of every broker of the context",
  options: {},
  notes: "Exits 1 if any broker is unreachable.",
  async run(_values, args, io) {
    positionals(args, []);
    const client = io.client();
    const rows = await Promise.all(
      io.urls().map(async (url) => {
        try {
          const s = await client.status(url);
          const state = s.wal.poisoned
            ? "wal-failed"
            : s.draining
              ? "draining"
              : s.ready
                ? "ready"
                : "not-ready";
          return {
            url,
            nodeId: s.nodeId,
            state,
            walPending: s.wal.pendingRecords,
            status: s,
            error: undefined,
          };
        } catch (e) {
          return {
            url,
            nodeId: undefined,
            state: "unreachable",
            walPending: undefined,
            status: undefined,
            error: (e as Error).message,
          };
        }
      }),
    );
    if (io.json) io.outJson({ brokers: rows });
    else
      io.out(
        table(
          ["URL", "NODE", "STATE", "WAL PENDING", "CORRUPT FRAMES", "ERROR"],
          rows.map((r) => [
            r.url,
            r.nodeId ?? "-",
            r.state,
            r.walPending ?? "-",
            r.status?.wal.corruptFrames ?? "-",
            r.error ?? "",
          ]),
        ),
      );
    return rows.some((r) => r.state === "unreachable") ? 1 : 0;
  },
};

export const cluster: CommandGroup = {
  summary: "cluster status: state and WAL of each broker",
  commands: { status },
};
