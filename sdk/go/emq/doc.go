// Package emq is the Go SDK of EchoMQ, a Redis/Valkey job queue whose wire
// contract is written down in protocol.yaml.
//
// The package has two layers. The wire layer (*_gen.go) is generated from
// the manifest by emqgen: the version and wire constants, the id canon
// (ParseID, Generator), key builders that refuse malformed queue names and
// ids before any command is sent (NewQueueKeys), one sentinel error per
// wire class (ErrKind, ErrStale), one typed call per Lua script
// (EnqueueCall, ClaimCall, ...) and the probes. The idiomatic layer on top
// is written by hand and uses only generated names:
//
//	c, err := emq.Connect(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}})
//	if err != nil { ... } // a keyspace fenced by another major is a *FenceError
//	defer c.Close()
//	q, err := c.Queue("orders")           // ErrQueueName before any command
//	id, _ := c.Mint(emq.WorkKind)
//	ok, err := q.Enqueue(ctx, id, payload) // false: a duplicate, the row untouched
//	job, err := q.Claim(ctx, 30*time.Second)
//	err = q.Complete(ctx, job.ID, job.Token) // errors.Is(err, emq.ErrStale) after a lost lease
//
// Connect fences the keyspace (the version record and the bundle identity
// in the reserve) and fences it again after every reconnect. Every id is a
// branded snowflake; its mint time lives in the id, so nothing else records
// when a job was enqueued.
package emq
