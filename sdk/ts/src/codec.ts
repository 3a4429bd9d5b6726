// Typed payloads: a Codec turns values into payloads and back, and a
// TypedQueue<T> pushes values of T and hands workers the decoded value.
// Raw bytes stay the default: client.queue(name) is a Queue of Buffers.

import type { CallOptions } from "./client.js";
import { prefixed } from "./errors.js";
import { printable } from "./print.js";
import type { BatchResult, Job, JobInfo, Payload, Queue } from "./queue.js";
import {
  permanent,
  Worker,
  type ActiveJob,
  type WorkerOptions,
} from "./worker.js";
import type { AddOptions, AddResult, PushOptions } from "./outputs.js";
import type { SchedulerSpec, SchedulerUpsert } from "./schedulers.js";
import type {
  DedupBatchOptions,
  DedupBatchResult,
  DedupPushOptions,
  DedupResult,
} from "./dedup.js";

/** Turns values of T into job payloads and payloads back into values. */
export interface Codec<T> {
  /** The payload of value; it may throw (a value the codec cannot carry), and then nothing is sent. */
  encode(value: T): Payload;
  /** The value of a payload encode made; it throws a payload it cannot read. */
  decode(payload: Buffer): T;
}

/**
 * The JSON codec: JSON.stringify as UTF-8 text, and JSON.parse. A value
 * JSON cannot carry (undefined, a function, a symbol, a BigInt, a cycle) is
 * refused with a CodecError before anything is sent. T is what the caller
 * says the payloads hold: decode checks only that the text is JSON.
 */
export function json<T>(): Codec<T> {
  return jsonCodec as Codec<T>;
}

/** The JSON codec of unknown values; json<T>() is the same, typed. */
export const jsonCodec: Codec<unknown> = {
  encode(value: unknown): Payload {
    let text: string | undefined;
    try {
      text = JSON.stringify(value);
    } catch (err) {
      throw new CodecError(
        "json: cannot encode the value: " +
          (err instanceof Error ? err.message : String(err)),
        { cause: err },
      );
    }
    if (text === undefined) {
      throw new CodecError("json: cannot encode " + typeof value);
    }
    return text;
  },
  decode(payload: Buffer): unknown {
    try {
      return JSON.parse(payload.toString("utf8")) as unknown;
    } catch (err) {
      throw new CodecError(
        "json: the payload is not JSON: " +
          (err instanceof Error ? err.message : String(err)),
        { cause: err },
      );
    }
  },
};

/** A value a codec could not encode, or a payload it could not decode. */
export class CodecError extends Error {
  /** The job whose payload could not be decoded, when there was one. */
  readonly job: Job | undefined;

  constructor(message: string, options?: { cause?: unknown; job?: Job }) {
    super(
      prefixed("codec", message),
      options?.cause === undefined ? undefined : { cause: options.cause },
    );
    this.name = "CodecError";
    this.job = options?.job;
  }
}

/** Options of a typed queue (Client.queue with a codec). */
export interface QueueOptions<T> {
  /** How values become payloads and back, e.g. json<Order>(). */
  codec: Codec<T>;
}

/** A claimed job of a typed queue: the Job, and its payload decoded. */
export interface TypedJob<T> extends Job {
  /** The payload, decoded by the queue's codec. */
  readonly data: T;
}

/** What inspection shows of one job of a typed queue: the JobInfo, and its payload decoded. */
export interface TypedJobInfo<T> extends JobInfo {
  /** The payload, decoded by the queue's codec. */
  readonly data: T;
}

/** A job of a typed queue to admit. */
export interface NewTypedJob<T> {
  readonly id: string;
  readonly data: T;
  /** The job's deduplication key, as NewJob.dedupKey (echomq 2.5.0). */
  readonly dedupKey?: string | Uint8Array;
}

/** A job of a typed queue as a worker's handler runs it: the TypedJob, with updateProgress (see ActiveJob). */
export interface TypedActiveJob<T> extends TypedJob<T>, ActiveJob {}

/** A handler of a typed queue's jobs; see Handler. */
export type TypedHandler<T> = (
  job: TypedJob<T>,
  signal: AbortSignal,
) => Promise<void>;

/** A handler of a typed queue's jobs that may report progress and return a result; see ResultHandler. */
export type TypedResultHandler<T> = (
  job: TypedActiveJob<T>,
  signal: AbortSignal,
) => Promise<unknown>;

/** The job, its payload decoded, printing with its data. */
function typed<T, J extends Job | JobInfo>(
  job: J,
  data: T,
): J & { readonly data: T } {
  return printable("token" in job ? "TypedJob" : "TypedJobInfo", {
    ...job,
    data,
  });
}

/**
 * A queue whose payloads are values of T, through a codec: push takes a T,
 * and claim, get and the worker's jobs carry the decoded value as data
 * beside the raw payload. raw is the untyped Queue, for everything that
 * does not carry a payload (complete, retry, sizes, page, ...).
 */
export class TypedQueue<T> {
  /** The untyped queue underneath. */
  readonly raw: Queue;
  /** The queue's codec. */
  readonly codec: Codec<T>;

  /** Use client.queue(name, { codec }). */
  constructor(raw: Queue, codec: Codec<T>) {
    this.raw = raw;
    this.codec = codec;
  }

  /** The queue's name. */
  get name(): string {
    return this.raw.name;
  }

  #encode(value: T, i?: number): Payload {
    try {
      return this.codec.encode(value);
    } catch (err) {
      if (err instanceof CodecError) {
        if (i !== undefined) {
          const head = prefixed("codec", "");
          err.message =
            head + "job " + i + ": " + err.message.slice(head.length);
        }
        throw err;
      }
      throw new CodecError(
        (i === undefined ? "" : "job " + i + ": ") +
          "cannot encode the value: " +
          (err instanceof Error ? err.message : String(err)),
        { cause: err },
      );
    }
  }

  /** Decodes job's payload; a payload the codec cannot read throws a CodecError carrying the job. */
  decode<J extends Job | JobInfo>(job: J): J & { readonly data: T } {
    let data: T;
    try {
      data = this.codec.decode(job.payload);
    } catch (err) {
      const why = err instanceof Error ? err.message : String(err);
      throw new CodecError(
        "job " + job.id + ": cannot decode its payload: " + why,
        {
          cause: err,
          ...("token" in job ? { job: job as Job } : {}),
        },
      );
    }
    return typed(job, data);
  }

  /** Queue.push with a deduplication key (echomq 2.5.0) and the value encoded; it resolves what the push did. */
  async push(
    id: string,
    value: T,
    opts: DedupPushOptions,
  ): Promise<DedupResult>;
  /** Queue.push with the value encoded (job options included); a value the codec refuses throws a CodecError and nothing is sent. */
  async push(id: string, value: T, opts?: PushOptions): Promise<boolean>;
  /** Queue.push with the value encoded. */
  async push(id: string, value: T, opts?: CallOptions): Promise<boolean>;
  async push(
    id: string,
    value: T,
    opts?: PushOptions | DedupPushOptions,
  ): Promise<boolean | DedupResult> {
    if (opts !== undefined && (opts as DedupPushOptions).dedup !== undefined) {
      return this.raw.push(id, this.#encode(value), opts as DedupPushOptions);
    }
    return this.raw.push(id, this.#encode(value), opts as PushOptions);
  }

  /**
   * Queue.upsertScheduler (echomq 2.6.0) with the runs' payload the value
   * encoded: its encoding is the template, in which the firing replaces
   * {scheduler}, {slot} and {until} (so a JSON codec's value may carry
   * them in its strings). A value the codec refuses throws a CodecError and
   * nothing is sent.
   */
  async upsertScheduler(
    id: string,
    value: T,
    spec: Omit<SchedulerSpec, "template">,
    opts?: CallOptions,
  ): Promise<SchedulerUpsert> {
    return this.raw.upsertScheduler(
      id,
      { ...spec, template: this.#encode(value) },
      opts,
    );
  }

  /** Queue.enqueue with the value encoded. */
  async enqueue(id: string, value: T, opts?: CallOptions): Promise<boolean> {
    return this.raw.enqueue(id, this.#encode(value), opts);
  }

  /** Queue.enqueueAt with the value encoded. */
  async enqueueAt(
    id: string,
    value: T,
    runAtMs: number,
    opts?: CallOptions,
  ): Promise<boolean> {
    return this.raw.enqueueAt(id, this.#encode(value), runAtMs, opts);
  }

  /** Queue.pushMany with each value encoded. */
  async pushMany(
    jobs: readonly NewTypedJob<T>[],
    opts?: CallOptions,
  ): Promise<boolean[]> {
    return this.raw.pushMany(
      jobs.map((j, i) => ({ id: j.id, payload: this.#encode(j.data, i) })),
      opts,
    );
  }

  /** Queue.addMany (echomq 2.4.0: one set of job options for every job) with each value encoded. */
  async addMany(
    jobs: readonly NewTypedJob<T>[],
    opts?: AddOptions,
  ): Promise<AddResult[]> {
    return this.raw.addMany(
      jobs.map((j, i) => ({ id: j.id, payload: this.#encode(j.data, i) })),
      opts,
    );
  }

  /** Queue.pushBatch with deduplication (echomq 2.5.0: each job's key its dedupKey) and each value encoded. */
  async pushBatch(
    jobs: readonly NewTypedJob<T>[],
    opts: DedupBatchOptions,
  ): Promise<DedupBatchResult[]>;
  /** Queue.pushBatch with each value encoded. */
  async pushBatch(
    jobs: readonly NewTypedJob<T>[],
    opts?: CallOptions,
  ): Promise<BatchResult[]>;
  async pushBatch(
    jobs: readonly NewTypedJob<T>[],
    opts?: CallOptions | DedupBatchOptions,
  ): Promise<BatchResult[] | DedupBatchResult[]> {
    const raw = jobs.map((j, i) => ({
      id: j.id,
      payload: this.#encode(j.data, i),
      ...(j.dedupKey === undefined ? {} : { dedupKey: j.dedupKey }),
    }));
    if (opts !== undefined && (opts as DedupBatchOptions).dedup !== undefined) {
      return this.raw.pushBatch(raw, opts as DedupBatchOptions);
    }
    return this.raw.pushBatch(raw, opts);
  }

  /**
   * Queue.claim, the payload decoded. A payload the codec cannot read
   * throws a CodecError whose job is the leased job (bury it with
   * raw.bury(job.id, job.token)).
   *
   * @deprecated Use claimMany(leaseMs, 1) (Queue.claim is deprecated).
   */
  async claim(
    leaseMs: number,
    opts?: CallOptions,
  ): Promise<TypedJob<T> | null> {
    const j = await this.raw.claim(leaseMs, opts);
    return j === null ? null : this.decode(j);
  }

  /** Queue.claimMany, each payload decoded (a payload the codec cannot read throws, as claim). */
  async claimMany(
    leaseMs: number,
    count: number,
    opts?: CallOptions,
  ): Promise<TypedJob<T>[]> {
    const jobs = await this.raw.claimMany(leaseMs, count, opts);
    return jobs.map((j) => this.decode(j));
  }

  /** Queue.get, the payload decoded. */
  async get(id: string, opts?: CallOptions): Promise<TypedJobInfo<T> | null> {
    const info = await this.raw.get(id, opts);
    return info === null ? null : this.decode(info);
  }

  /**
   * A Worker running handler over the queue's jobs, each with its payload
   * decoded. A payload the codec cannot read fails its job permanently
   * (it is buried: no retry decodes it), without calling handler.
   */
  worker(handler: TypedResultHandler<T>, options?: WorkerOptions): Worker;
  /** A Worker running handler over the queue's jobs (see the overload above). */
  worker(handler: TypedHandler<T>, options?: WorkerOptions): Worker;
  worker(handler: TypedResultHandler<T>, options?: WorkerOptions): Worker {
    return new Worker(
      this.raw,
      async (job, signal) => {
        let t: TypedJob<T>;
        try {
          t = this.decode(job);
        } catch (err) {
          throw permanent(err);
        }
        Object.defineProperty(t, "updateProgress", {
          enumerable: false,
          configurable: true,
          value: job.updateProgress,
        });
        return handler(t as TypedActiveJob<T>, signal);
      },
      options,
    );
  }
}
