// The in-run baseline: a fastify server with one POST route that reads the
// raw body and answers 202, on the same Node and machine as the broker.
import Fastify from "fastify";

const [host = "127.0.0.1", port = "0"] = (process.argv[2] ?? "").split(":");
const app = Fastify({ logger: false, bodyLimit: 64 * 1024 * 1024 });
app.removeAllContentTypeParsers();
app.addContentTypeParser("*", { parseAs: "buffer" }, (_req, body, done) => done(null, body));
app.post("/noop", async (_request, reply) => reply.code(202).send());
app.get("/readyz", async () => ({ status: "ready" }));
await app.listen({ host, port: Number(port) });
process.on("SIGTERM", () => app.close().then(() => process.exit(0)));
