package dashboard

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"strings"
	"time"

	"github.com/echomq/echomq/sdk/go/emq"
)

var pageNames = []string{"overview", "queue", "set", "job", "confirm", "bulk", "error", "search", "jobschedulers", "policyconfirm"}

func (d *Dashboard) parseTemplates() error {
	funcs := template.FuncMap{
		"base":       func() string { return d.opt.Base },
		"title":      func() string { return d.opt.Title },
		"sets":       emq.Sets,
		"ago":        ago,
		"ts":         stamp,
		"isZeroTime": func(t time.Time) bool { return t.IsZero() },
		"short":      func(n int64) string { return shortNumber(float64(n)) },
		"readOnly":   func() bool { return !d.opt.Actions },
		"join":       strings.Join,
		"plus":       func(a, b int) int { return a + b },
	}
	d.pages = map[string]*template.Template{}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/schedtable.html", "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("dashboard: template %s: %w", name, err)
		}
		d.pages[name] = t
	}
	return nil
}

// stamp prints t in UTC to the millisecond, "" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
}

// ago prints how long ago t was, from now, to the second (to the
// millisecond under a second).
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return age(now.Sub(t))
}

func age(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	var s string
	switch {
	case d < time.Second:
		s = d.Round(time.Millisecond).String()
	case d < time.Hour:
		s = d.Round(time.Second).String()
	case d < 48*time.Hour:
		s = d.Round(time.Minute).String()
	default:
		s = fmt.Sprintf("%dd", int(d.Hours()/24))
	}
	if neg {
		return "in " + s
	}
	return s + " ago"
}

// render writes page with data under status; a template failure is a 500.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, page string, data map[string]any) {
	var buf bytes.Buffer
	data["Base"] = d.opt.Base
	if r.Method == http.MethodGet && status == http.StatusOK {
		data["Refresh"] = r.URL.Query().Get("refresh") // checked by ServeHTTP
	}
	if err := d.pages[page].Execute(&buf, data); err != nil {
		d.opt.Logger.Error("dashboard: rendering", "page", page, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = buf.WriteTo(w)
}
