package dashboard

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
)

// BasicAuth returns a middleware (for Options.Auth) that admits a request
// only with HTTP basic credentials user and password, answering 401 with
// a WWW-Authenticate challenge otherwise. The comparison takes the same
// time whatever the credentials.
func BasicAuth(user, password string) func(http.Handler) http.Handler {
	wantU, wantP := sha256.Sum256([]byte(user)), sha256.Sum256([]byte(password))
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			u, p, ok := r.BasicAuth()
			gotU, gotP := sha256.Sum256([]byte(u)), sha256.Sum256([]byte(p))
			if !ok || subtle.ConstantTimeCompare(gotU[:], wantU[:])&subtle.ConstantTimeCompare(gotP[:], wantP[:]) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="emq dashboard", charset="UTF-8"`)
				http.Error(w, "authentication required", http.StatusUnauthorized)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}
