// The cluster RPC network: messages in flight with a delivery time. The
// world delivers any due message (so answers can overtake each other), and
// faults drop a request, drop an answer, or hold an answer until after the
// caller's deadline. A message is tied to the sender's and the receiver's
// process: a restart on either end breaks the connection and drops it.

export interface Message {
  id: number;
  label: string;
  fromNode: string;
  fromEpoch: number;
  toNode: string;
  toEpoch: number;
  deliverAtMs: number;
  deliver: () => void;
}

export class Network {
  #nextId = 1;
  readonly inFlight: Message[] = [];

  send(m: Omit<Message, "id">): void {
    this.inFlight.push({ ...m, id: this.#nextId++ });
  }

  due(nowMs: number): Message[] {
    return this.inFlight.filter((m) => m.deliverAtMs <= nowMs);
  }

  take(m: Message): void {
    const i = this.inFlight.indexOf(m);
    if (i >= 0) this.inFlight.splice(i, 1);
  }
}
