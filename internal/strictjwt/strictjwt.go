// Package strictjwt holds the JWT checks golang-jwt leaves lenient and that both of
// Phaseflow's verifiers (user tokens in api/auth, x-mcp-context tokens in mcpcontext) apply.
//
// golang-jwt decodes a NumericDate through json.Number, which also accepts a JSON string
// holding digits, so {"exp": "9999999999"} passes as a valid expiry. RFC 7519 §2 says a
// NumericDate is a JSON number; a string there is a malformed token, and a forged or
// careless issuer should not get a token that outlives every check by quoting a number.
package strictjwt

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrNotNumeric is returned when a time claim (exp, iat, nbf) is present but not a JSON
// number.
var ErrNotNumeric = errors.New("time claim is not a JSON number")

// CheckNumericDates reports an error wrapping [ErrNotNumeric] when the claims object
// payload holds exp, iat or nbf as anything but a JSON number (a string, null, an object…).
// Absent claims are fine; whether they are required is the parser's business. Call it from
// a claims type's UnmarshalJSON before decoding the claims themselves.
func CheckNumericDates(payload []byte) error {
	var claims map[string]json.RawMessage
	if err := json.Unmarshal(payload, &claims); err != nil {
		return err
	}
	for _, name := range []string{"exp", "iat", "nbf"} {
		if raw, ok := claims[name]; ok && !isNumber(raw) {
			return fmt.Errorf("%w: %s", ErrNotNumeric, name)
		}
	}
	return nil
}

// isNumber reports whether raw, a syntactically valid JSON value, is a number: numbers are
// the only JSON values that start with a digit or a minus sign.
func isNumber(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	c := raw[0]
	return c == '-' || (c >= '0' && c <= '9')
}
