package dashboard

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strconv"
	"strings"
	"time"
)

// csrf issues and checks the tokens of action forms: a token is its expiry
// and an HMAC, under a key of the dashboard, of the expiry and the action
// it was issued for (action, queue, id), so that it is good for that one
// action only, for csrfLife. A page of another site cannot read the token
// from a confirmation page (the same-origin policy), so it cannot forge a
// form that carries one.
type csrf struct{ key []byte }

const csrfLife = 30 * time.Minute

func (c csrf) mac(exp int64, action, queue, id string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte(strconv.FormatInt(exp, 10) + "\x00" + action + "\x00" + queue + "\x00" + id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (c csrf) issue(now time.Time, action, queue, id string) string {
	exp := now.Add(csrfLife).Unix()
	return strconv.FormatInt(exp, 10) + "." + c.mac(exp, action, queue, id)
}

func (c csrf) check(now time.Time, token, action, queue, id string) bool {
	e, sum, ok := strings.Cut(token, ".")
	if !ok {
		return false
	}
	exp, err := strconv.ParseInt(e, 10, 64)
	if err != nil || now.Unix() > exp {
		return false
	}
	return hmac.Equal([]byte(sum), []byte(c.mac(exp, action, queue, id)))
}
