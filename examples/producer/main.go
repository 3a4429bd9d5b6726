// Command producer is the EchoMQ example order producer: it mints an ORD id
// for each incoming order and enqueues a JOB whose JSON payload carries it,
// printing each job's id.
//
//	go run ./examples/producer -n 100                 # 100 simulated orders, one Push each
//	go run ./examples/producer -n 1000 -batch 50      # PushBatch, 50 jobs a round trip
//	go run ./examples/producer -n 50 -rate 5          # 5 orders a second
//	printf '3\n1\n7\n' | go run ./examples/producer -in -   # quantities from standard input
//
// Flags: -addr (default 127.0.0.1:6379), -queue (default orders), -n,
// -in, -rate, -batch, -linger. SIGINT or SIGTERM stops it cleanly: it
// pushes the orders it holds and exits 0. The service is
// orders.RunProducer; see examples/README.md.
package main

import "github.com/echomq/echomq/examples/orders"

func main() { orders.Main("producer", orders.RunProducer) }
