package config

import (
	"encoding/json"
	"log/slog"
)

// redacted is what every printable form of a non-empty [Secret] shows instead of its value.
const redacted = "[redacted]"

// Secret holds a credential (a signing key, an API key). Its printable forms — fmt verbs,
// slog attributes, JSON, text marshalling — all show "[redacted]" (or "" when unset), so a
// secret cannot reach a log line or an API answer by accident; [Secret.Reveal] is the one
// deliberate way to get the value.
type Secret string

// Reveal returns the secret's value. Call it only where the value is used (signing, an
// outgoing Authorization header), never to log or print it.
func (s Secret) Reveal() string { return string(s) }

// IsSet reports whether a value was configured, without exposing it.
func (s Secret) IsSet() bool { return s != "" }

// String redacts the value so that fmt's %v, %s and %q never print it.
func (s Secret) String() string {
	if s == "" {
		return ""
	}
	return redacted
}

// GoString redacts the value for %#v as well, which does not go through String.
func (s Secret) GoString() string { return `config.Secret("` + s.String() + `")` }

// LogValue makes slog print the redacted form whatever handler is in use.
func (s Secret) LogValue() slog.Value { return slog.StringValue(s.String()) }

// MarshalJSON redacts the value when a Secret sits in a struct that is encoded to JSON.
func (s Secret) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

// MarshalText redacts the value for text-based encoders (encoding/xml, map keys, YAML).
func (s Secret) MarshalText() ([]byte, error) { return []byte(s.String()), nil }
