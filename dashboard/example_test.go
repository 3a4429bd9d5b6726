package dashboard_test

import (
	"context"
	"net/http"

	"github.com/redis/rueidis"

	"github.com/echomq/echomq/dashboard"
	"github.com/echomq/echomq/sdk/go/emq"
)

// Mount the dashboard under /emq/ of a service, behind basic auth, with
// card numbers masked in payloads.
func Example() {
	ctx := context.Background()
	c, err := emq.Observe(ctx, emq.Options{Redis: rueidis.ClientOption{InitAddress: []string{"127.0.0.1:6379"}}})
	if err != nil {
		return
	}
	defer c.Close()
	d, err := dashboard.New(dashboard.Options{
		Client: c,
		Base:   "/emq",
		Auth:   dashboard.BasicAuth("ops", "change me"),
		Mask:   dashboard.MaskJSONFields("card"),
	})
	if err != nil {
		return
	}
	go d.Run(ctx) // samples the queues for the charts
	http.Handle("/emq/", http.StripPrefix("/emq", d))
}
