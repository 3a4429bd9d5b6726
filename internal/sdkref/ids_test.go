package sdkref_test

import (
	"errors"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/echomq/echomq/gen/model"
	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
)

// reference loads the manifest: the generator's model is the reference
// the generated code is checked against.
func reference(t testing.TB) *model.Protocol {
	t.Helper()
	p, err := model.Load("../../protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIDExamples(t *testing.T) {
	p := reference(t)
	for _, ex := range p.IDs.Examples {
		id, err := emq.ParseID(ex.ID)
		if err != nil {
			t.Errorf("ParseID(%q): %v", ex.ID, err)
			continue
		}
		if !id.Time().Equal(ex.Time) || int64(id.Node()) != ex.Node || int64(id.Sequence()) != ex.Sequence || id.String() != ex.ID {
			t.Errorf("%s decodes to %v node %d seq %d; want %v node %d seq %d", ex.ID, id.Time(), id.Node(), id.Sequence(), ex.Time, ex.Node, ex.Sequence)
		}
	}
	for _, bad := range p.IDs.Invalid {
		if _, err := emq.ParseID(bad); !errors.Is(err, emq.ErrID) {
			t.Errorf("ParseID(%q) = %v; want ErrID", bad, err)
		}
	}
}

func TestIDAgreesWithReference(t *testing.T) {
	p := reference(t)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		v := r.Uint64() >> 1
		want := p.IDs.FormatID("JOB", v)
		id, err := emq.ParseID(want)
		if err != nil || id.Value() != v {
			t.Fatalf("ParseID(%q) = %v, %v; want value %d", want, id.Value(), err, v)
		}
		tm := time.UnixMilli(int64(v>>22) + p.IDs.Epoch.UnixMilli())
		made, err := emq.NewID(emq.KindJOB, tm, id.Node(), id.Sequence())
		if err != nil || made != id {
			t.Fatalf("NewID(%v, %d, %d) = %v, %v; want %v", tm, id.Node(), id.Sequence(), made, err, id)
		}
	}
}

func TestQueueNames(t *testing.T) {
	p := reference(t)
	for _, ok := range p.Queues.Examples {
		if _, err := wire.NewQueueKeys(ok); err != nil {
			t.Errorf("NewQueueKeys(%q): %v", ok, err)
		}
	}
	for _, bad := range p.Queues.Invalid {
		if _, err := wire.NewQueueKeys(bad); !errors.Is(err, emq.ErrQueueName) {
			t.Errorf("NewQueueKeys(%q) = %v; want ErrQueueName", bad, err)
		}
		if _, err := wire.KeyMigration(bad); !errors.Is(err, emq.ErrQueueName) {
			t.Errorf("KeyMigration(%q) = %v; want ErrQueueName", bad, err)
		}
	}
	k, _ := wire.NewQueueKeys("orders")
	if _, err := k.Row(emq.ID{}); !errors.Is(err, emq.ErrID) {
		t.Errorf("Row(zero ID) = %v; want ErrID", err)
	}
}

// TestGeneratorMonotonic mints from many goroutines: every id is unique,
// and sorting by bytes, by value and by mint order agree per goroutine.
func TestGeneratorMonotonic(t *testing.T) {
	g, err := wire.NewGenerator(7)
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 8, 5000
	out := make([][]emq.ID, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				id, err := g.Mint(emq.WorkKind)
				if err != nil {
					t.Error(err)
					return
				}
				out[w] = append(out[w], id)
			}
		}()
	}
	wg.Wait()
	seen := map[emq.ID]bool{}
	var all []emq.ID
	for _, ids := range out {
		for i, id := range ids {
			if seen[id] {
				t.Fatalf("duplicate id %v", id)
			}
			seen[id] = true
			if id.Node() != 7 || id.Kind() != emq.WorkKind {
				t.Fatalf("%v: node %d kind %s", id, id.Node(), id.Kind())
			}
			if i > 0 && !(ids[i-1].String() < id.String() && ids[i-1].Value() < id.Value()) {
				t.Fatalf("%v minted after %v is not greater", id, ids[i-1])
			}
		}
		all = append(all, ids...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].String() < all[j].String() })
	for i := 1; i < len(all); i++ {
		if all[i-1].Value() >= all[i].Value() {
			t.Fatalf("byte order and numeric order disagree at %v, %v", all[i-1], all[i])
		}
	}
	if _, err := g.Mint("XYZ"); err == nil {
		t.Error("Mint of an unregistered kind succeeded")
	}
	if _, err := wire.NewGenerator(wire.MaxNode + 1); err == nil {
		t.Error("NewGenerator(MaxNode+1) succeeded")
	}
}

// FuzzParseID checks the generated parser against the generator's reference.
func FuzzParseID(f *testing.F) {
	p := reference(f)
	for _, ex := range p.IDs.Examples {
		f.Add(ex.ID)
	}
	for _, bad := range p.IDs.Invalid {
		f.Add(bad)
	}
	f.Fuzz(func(t *testing.T, s string) {
		id, err := emq.ParseID(s)
		_, refErr := p.IDs.ParseID(s)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("ParseID(%q): generated %v, reference %v", s, err, refErr)
		}
		if err == nil && id.String() != s {
			t.Fatalf("ParseID(%q).String() = %q", s, id.String())
		}
	})
}
