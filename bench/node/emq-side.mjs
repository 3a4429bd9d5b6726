// The EchoMQ TypeScript SDK (sdk/ts, linked as @echomq/sdk): queue.push (the
// concurrent pushes of the producers coalesced into push_many calls, the
// SDK's default) and queue.pushBatch (chunked push_many) to enqueue, a
// Worker of the given concurrency (declared-key scripts only: claim_ids,
// complete_claim_ids, one call per job in the steady state) to process.
// Like BullMQ's Queue and Worker, the producers and the worker hold their
// own connections (a client each).
import { connect, Worker, SDK_VERSION } from "@echomq/sdk";
import { VERSION } from "@echomq/sdk/wire";

const queueName = "bench";

export class EmqSide {
  name = "emq";
  batched = true;

  async version() {
    return `@echomq/sdk ${SDK_VERSION} (protocol ${VERSION}), redis (node-redis)`;
  }

  async open(addr, concurrency) {
    this.url = `redis://${addr}`;
    this.concurrency = concurrency;
    this.client = await connect({ url: this.url });
    this.queue = this.client.queue(queueName);
  }

  async close() {
    await this.client?.close();
    this.client = undefined;
  }

  async enqueue(payload) {
    const ok = await this.queue.push(this.client.mint(), payload);
    if (!ok) throw new Error("push: duplicate id");
  }

  async enqueueBatch(payloads) {
    const results = await this.queue.pushBatch(payloads.map((payload) => ({ id: this.client.mint(), payload })));
    for (const r of results) {
      if (r.error) throw r.error;
      if (!r.enqueued) throw new Error("pushBatch: duplicate id");
    }
  }

  async startWorker(handle) {
    const client = await connect({ url: this.url });
    const worker = new Worker(
      client.queue(queueName),
      async (job) => {
        handle(job.payload.toString());
      },
      { concurrency: this.concurrency },
    );
    const ac = new AbortController();
    const running = worker.run(ac.signal);
    return async () => {
      ac.abort();
      await running;
      await client.close();
    };
  }
}
