package emq_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/echomq/echomq/sdk/go/emq"
	"github.com/echomq/echomq/sdk/go/emq/wire"
	"github.com/echomq/echomq/sdk/go/redistest"
)

// versionVectors reads the generated conformance/vectors/versions.json:
// each record with this version's verdict on it.
func versionVectors(t *testing.T) map[string]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "conformance", "vectors", "versions.json"))
	if err != nil {
		t.Fatalf("the version vectors (go run ./cmd/emqgen gen writes them): %v", err)
	}
	var f struct {
		Version string
		Cases   []struct {
			Name   string
			Args   struct{ Record string }
			Result struct{ Verdict string }
		}
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if f.Version != emq.Version {
		t.Fatalf("the vectors are of version %s, the SDK of %s: regenerate", f.Version, emq.Version)
	}
	out := map[string]string{}
	for _, c := range f.Cases {
		out[c.Args.Record] = c.Result.Verdict
	}
	if len(out) < 20 {
		t.Fatalf("only %d version vectors", len(out))
	}
	return out
}

// TestVersionVectorsAgreeWithTheFence: on every record of the version
// vectors, the fence script on a real server does what the vector's verdict
// says, and so does JudgeVersionRecord: current and ahead are admitted and
// left as found, behind is raised to this version, foreign is refused with
// nothing written (neither the record nor the bundle identity).
func TestVersionVectorsAgreeWithTheFence(t *testing.T) {
	srv := redistest.Start(t)
	rc := rawClient(t, srv)
	ctx := ctxT(t)
	call := wire.FenceCall{VersionKey: wire.KeyVersion, BundleKey: wire.KeyBundle,
		Version: wire.VersionRecord, Semver: emq.Version, Bundle: wire.BundleDigest}
	for rec, verdict := range versionVectors(t) {
		if got := emq.JudgeVersionRecord(rec).String(); got != verdict {
			t.Errorf("JudgeVersionRecord(%q) = %s; the vector says %s", rec, got, verdict)
		}
		if _, err := srv.Do("FLUSHALL"); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Do("SET", wire.KeyVersion, rec); err != nil {
			t.Fatal(err)
		}
		before := keyspace(t, srv)
		reply, err := call.Exec(ctx, rc)
		if err != nil {
			t.Errorf("fence on %q: %v", rec, err)
			continue
		}
		after := keyspace(t, srv)
		stored, err := srv.Do("GET", wire.KeyVersion)
		if err != nil {
			t.Fatal(err)
		}
		switch verdict {
		case "current", "ahead":
			if reply.Version != rec || reply.Bundle != wire.BundleDigest || stored != rec {
				t.Errorf("fence on %q (%s) = %+v, record now %q; want admitted, left as found, this bundle recorded", rec, verdict, reply, stored)
			}
		case "behind":
			if reply.Version != wire.VersionRecord || reply.Bundle != wire.BundleDigest || stored != wire.VersionRecord {
				t.Errorf("fence on %q (behind) = %+v, record now %q; want raised to %s", rec, reply, stored, wire.VersionRecord)
			}
		case "foreign":
			if reply.Version != rec || reply.Bundle != "" {
				t.Errorf("fence on %q (foreign) = %+v; want the record found and no bundle", rec, reply)
			}
			if d := diffKeys(before, after); len(d) != 0 {
				t.Errorf("the fence refused %q and wrote %v", rec, d)
			}
		default:
			t.Fatalf("vector %q: unknown verdict %q", rec, verdict)
		}
	}
}
