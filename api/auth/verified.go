package auth

import (
	"sync"
	"time"
)

// maxVerified bounds a verifiedTokens cache: entries are a token and its claims, a few
// hundred bytes each.
const maxVerified = 4096

// verifiedTokens remembers HS256 tokens a parser has accepted, until they expire, so that a
// client sending the same bearer token with every request (every client does) has it
// checked once: parsing and checking a token with encoding/json and HMAC was a visible
// share of Phaseflow's CPU, twice a turn (the session and the message).
//
// Only tokens signed with the configured secret are kept. Their check cannot change while
// the process runs except with time, and time only ends a token: once iat and nbf have
// passed and its lifetime was found within MaxTTL, only exp (with Leeway) can refuse it,
// and an entry is dropped at that moment. Tokens checked against an identity provider's
// keys are not kept: the provider may withdraw a key, and that must refuse its tokens at
// once. Refusals are not kept either. When the cache is full, expired entries go, and if
// that frees nothing, all of them.
type verifiedTokens struct {
	mu sync.Mutex
	m  map[string]verifiedToken
}

// verifiedToken is a kept token's claims and when they stop being valid.
type verifiedToken struct {
	claims Claims
	until  time.Time
}

// get returns a copy of token's claims if it is kept and still valid at now.
func (v *verifiedTokens) get(token string, now time.Time) (*Claims, bool) {
	v.mu.Lock()
	e, ok := v.m[token]
	if ok && !now.Before(e.until) {
		delete(v.m, token)
		ok = false
	}
	v.mu.Unlock()
	if !ok {
		return nil, false
	}
	c := e.claims
	return &c, true
}

// put keeps token's claims c, valid until until.
func (v *verifiedTokens) put(token string, c *Claims, until time.Time, now time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.m == nil {
		v.m = make(map[string]verifiedToken)
	}
	if len(v.m) >= maxVerified {
		for k, e := range v.m {
			if !now.Before(e.until) {
				delete(v.m, k)
			}
		}
		if len(v.m) >= maxVerified {
			clear(v.m)
		}
	}
	v.m[token] = verifiedToken{claims: *c, until: until}
}
