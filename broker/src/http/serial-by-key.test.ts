import { describe, expect, it } from "vitest";
import { SerialByKey } from "./serial-by-key.ts";

const tick = () => new Promise((ok) => setTimeout(ok, 5));

describe("SerialByKey", () => {
  it("runs tasks of one key in order, one at a time, and other keys alongside", async () => {
    const serial = new SerialByKey();
    const log: string[] = [];
    const task = (name: string) => async () => {
      log.push(`${name}:start`);
      await tick();
      log.push(`${name}:end`);
      return name;
    };
    const results = await Promise.all([
      serial.run("t", task("a")),
      serial.run("t", task("b")),
      serial.run("u", task("c")),
    ]);
    expect(results).toEqual(["a", "b", "c"]);
    expect(log.indexOf("a:end")).toBeLessThan(log.indexOf("b:start"));
    expect(log.indexOf("c:start")).toBeLessThan(log.indexOf("a:end"));
  });

  it("keeps going after a failed task and forgets idle keys", async () => {
    const serial = new SerialByKey();
    const failed = serial.run("t", async () => {
      throw new Error("boom");
    });
    const next = serial.run("t", async () => "ok");
    await expect(failed).rejects.toThrow("boom");
    expect(await next).toBe("ok");
    await tick();
    expect(serial.size).toBe(0);
  });
});
