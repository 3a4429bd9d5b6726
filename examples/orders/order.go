// Package orders holds the two example services of EchoMQ — an order
// producer and an order worker — and the payload contract they share.
//
// The programs themselves are examples/producer and examples/worker; each
// main only wires signals to RunProducer or RunWorker, which tests call
// in-process. See examples/README.md.
package orders

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/echomq/echomq/sdk/go/emq"
)

// Order is the cargo of one job: the order it is about, named by its ORD
// id, and a quantity. The payload carries the order's id, never a row or a
// key: the job is the unit of work, the order is data the work is about.
//
// Its JSON form is {"order":"ORD0Nt6z93U3dY","qty":3}; the id marshals as
// its 14 bytes of text and is re-parsed (emq.ParseID) when decoded.
type Order struct {
	ID  emq.ID `json:"order"`
	Qty int    `json:"qty"`
}

// ErrBadOrder means a payload is not an order: not JSON, no order id, an
// id of another kind than emq.KindORD, or a quantity that is not positive.
// No retry can fix such a payload.
var ErrBadOrder = errors.New("not an order")

// Payload encodes o as a job payload.
func (o Order) Payload() ([]byte, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	return json.Marshal(o)
}

// Decode reads an order from a job payload. Any failure wraps ErrBadOrder;
// a malformed id also wraps emq.ErrID.
func Decode(payload []byte) (Order, error) {
	var o Order
	if err := json.Unmarshal(payload, &o); err != nil {
		return Order{}, fmt.Errorf("%w: %w", ErrBadOrder, err)
	}
	if err := o.check(); err != nil {
		return Order{}, err
	}
	return o, nil
}

func (o Order) check() error {
	switch {
	case o.ID.IsZero():
		return fmt.Errorf("%w: no order id", ErrBadOrder)
	case o.ID.Kind() != emq.KindORD:
		return fmt.Errorf("%w: %s is a %s id, want %s", ErrBadOrder, o.ID, o.ID.Kind(), emq.KindORD)
	case o.Qty <= 0:
		return fmt.Errorf("%w: quantity %d of %s is not positive", ErrBadOrder, o.Qty, o.ID)
	}
	return nil
}
