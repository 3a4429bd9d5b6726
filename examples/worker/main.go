// Command worker is the EchoMQ example order worker: an emq.Worker that
// decodes the order each job carries, "processes" it, retries simulated
// failures and buries payloads that are not orders.
//
//	go run ./examples/worker                          # 10 handlers, 100ms of work, 10% failures
//	go run ./examples/worker -concurrency 50 -work 20ms -fail-rate 0
//
// Flags: -addr (default 127.0.0.1:6379), -queue (default orders),
// -concurrency, -work, -fail-rate, -max-attempts, -retry-base,
// -shutdown-timeout, -report. SIGINT or SIGTERM shuts it down gracefully:
// running handlers finish (or their jobs are handed back after
// -shutdown-timeout), the counters are printed, and it exits 0. The
// service is orders.RunWorker; see examples/README.md.
package main

import "github.com/echomq/echomq/examples/orders"

func main() { orders.Main("worker", orders.RunWorker) }
