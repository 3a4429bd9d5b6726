package dashboard_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"net/url"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
)

// TestBulkPurgeAndMaskedPreview: a bulk purge of a queue's dead set is
// refused read-only and without its token, its confirmation is a dry run
// that writes nothing, and with its token every dead job's row and id are
// gone; the set page's payload preview is masked as the job page is.
func TestBulkPurgeAndMaskedPreview(t *testing.T) {
	w := seed(t, 2, 3)
	ctx := ctxT(t)
	orders, _ := w.c.Queue("orders")
	dead := w.ids["orders"][emq.StateDead]
	deadSet := string(emq.SetDead)
	setURL := "/queue/orders/set/" + deadSet

	_, ro := serve(t, w.srv, dashboard.Options{})
	if code, _ := get(t, ro.URL+setURL+"/purge"); code != http.StatusForbidden {
		t.Errorf("read-only bulk confirmation = %d, want 403", code)
	}
	if resp := post(t, ro.URL+setURL+"/purge", url.Values{"csrf": {"anything"}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("read-only bulk purge = %d, want 403", resp.StatusCode)
	}
	if _, body := get(t, ro.URL+setURL); strings.Contains(body, "Purge all") {
		t.Errorf("a read-only set page offers bulk actions")
	}

	_, rw := serve(t, w.srv, dashboard.Options{Actions: true, Mask: dashboard.MaskJSONFields("card")})
	code, body := get(t, rw.URL+setURL)
	if code != http.StatusOK || !strings.Contains(body, `id="bulk-purge"`) {
		t.Fatalf("the dead set page (%d) offers no bulk purge:\n%s", code, body)
	}
	if strings.Contains(body, "4111") || !strings.Contains(body, `&#34;card&#34;:&#34;***&#34;`) {
		t.Errorf("the set page's preview is not masked:\n%s", body)
	}
	// A bulk action on a set it does not act on, and an unknown one.
	for _, u := range []string{"/queue/orders/set/" + string(emq.SetPending) + "/purge", setURL + "/explode"} {
		if code, _ := get(t, rw.URL+u); code != http.StatusBadRequest {
			t.Errorf("GET %s = %d, want 400", u, code)
		}
	}
	// The dry run: the count and the ids, nothing written.
	before := commandCalls(t, w.srv, "evalsha") + commandCalls(t, w.srv, "eval")
	code, body = get(t, rw.URL+setURL+"/purge")
	if code != http.StatusOK || !strings.Contains(body, `id="would">3<`) {
		t.Fatalf("the dry run (%d) does not say 3 jobs:\n%s", code, body)
	}
	for _, id := range dead {
		if !strings.Contains(body, id.String()) {
			t.Errorf("the dry run does not list %s", id)
		}
	}
	if after := commandCalls(t, w.srv, "evalsha") + commandCalls(t, w.srv, "eval"); after != before {
		t.Errorf("the dry run ran %d scripts", after-before)
	}
	if n, _ := orders.Size(ctx, emq.SetDead); n != 3 {
		t.Fatalf("after the dry run the dead set holds %d", n)
	}
	tok := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if tok == nil {
		t.Fatal("the dry run has no form token")
	}
	// Refused without the token, and with a token of the other bulk action.
	if resp := post(t, rw.URL+setURL+"/purge", url.Values{}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bulk purge without a token = %d", resp.StatusCode)
	}
	if resp := post(t, rw.URL+setURL+"/revive", url.Values{"csrf": {tok[1]}}); resp.StatusCode != http.StatusForbidden {
		t.Errorf("bulk revive with purge's token = %d", resp.StatusCode)
	}
	resp := post(t, rw.URL+setURL+"/purge", url.Values{"csrf": {tok[1]}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("bulk purge = %d, want 303", resp.StatusCode)
	}
	for _, id := range dead {
		if _, ok, _ := orders.Get(ctx, id); ok {
			t.Errorf("after bulk purge %s still has a row", id)
		}
	}
	if n, _ := orders.Size(ctx, emq.SetDead); n != 0 {
		t.Errorf("after bulk purge the dead set holds %d", n)
	}
	if _, body := get(t, rw.URL+resp.Header.Get("Location")); !strings.Contains(body, `id="flash">3 `) {
		t.Errorf("the dead set page after bulk purge:\n%s", body)
	}
	if n, _ := orders.Size(ctx, emq.SetPending); n != 2 {
		t.Errorf("bulk purge touched pending: %d", n)
	}
}
