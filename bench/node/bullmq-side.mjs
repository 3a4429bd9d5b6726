// The peer: BullMQ (its current major from npm) on ioredis, with
// removeOnComplete so that finished jobs are deleted as the EchoMQ worker
// retires them. Producers and the worker hold their own connections, as
// BullMQ's Queue and Worker do by default.
import { Queue, Worker } from "bullmq";
import IORedis from "ioredis";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);

const queueName = "bench";
const jobName = "job";
const jobOptions = { removeOnComplete: true, removeOnFail: true };

export class BullMQSide {
  name = "bullmq";
  batched = true;

  async version() {
    return `bullmq ${require("bullmq/package.json").version}, ioredis ${require("ioredis/package.json").version}`;
  }

  async open(addr, concurrency) {
    const [host, port] = split(addr);
    this.connection = { host, port };
    this.concurrency = concurrency;
    this.queue = new Queue(queueName, { connection: this.connection });
    await this.queue.waitUntilReady();
  }

  async close() {
    await this.queue?.close();
    this.queue = undefined;
  }

  async enqueue(payload) {
    await this.queue.add(jobName, payload, jobOptions);
  }

  async enqueueBatch(payloads) {
    await this.queue.addBulk(payloads.map((data) => ({ name: jobName, data, opts: jobOptions })));
  }

  async startWorker(handle) {
    // A Worker needs maxRetriesPerRequest: null on its blocking connection.
    const connection = new IORedis({ ...this.connection, maxRetriesPerRequest: null });
    const worker = new Worker(
      queueName,
      async (job) => {
        handle(job.data);
      },
      { connection, concurrency: this.concurrency, autorun: false },
    );
    worker.on("error", () => {});
    const running = worker.run();
    await worker.waitUntilReady();
    return async () => {
      await worker.close();
      await running.catch(() => {});
      connection.disconnect();
    };
  }
}

function split(addr) {
  const i = addr.lastIndexOf(":");
  return [addr.slice(0, i), Number(addr.slice(i + 1))];
}
