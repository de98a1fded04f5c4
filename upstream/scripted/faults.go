package scripted

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// markerRE finds the [[name]] and [[name:value]] markers that drive the scripted upstream
// from the latest user message, so end-to-end tests can trigger faults through the real
// server without any side channel.
var markerRE = regexp.MustCompile(`\[\[([a-z_]+)(?::([A-Za-z0-9_.:-]+))?\]\]`)

// defaultSlowFirstToken is the wait of [[fault:slow_first_token]].
const defaultSlowFirstToken = 2 * time.Second

// faults is what the markers of one request ask for.
type faults struct {
	firstToken    time.Duration // wait before the first delta
	pace          time.Duration // delay between deltas; 0 = the server's
	scenario      string
	http429       bool
	http500       bool
	midStream     bool // an error event after some deltas
	stall         bool // nothing after some deltas until the client leaves
	abruptClose   bool // the connection drops after some deltas
	brokenXML     bool
	wrongLanguage bool
	emptyReply    bool // a completed response with no text at all
	flood         int  // [[flood:N]]: N more one-byte deltas in the final answer
	noGenUI       bool // the scenario's reply without its AGENT_UI_JSON block
	noPatch       bool // the scenario's reply without its AGENT_STATE_PATCH block
	// once lists the *_once markers present; each is bad on its first request only.
	once []string
	// skill holds the faults only a JSON skill's answer has.
	skill skillFaults
}

// parseFaults reads the markers of the latest user message. Unknown markers are ignored, so
// a typo gives a normal reply rather than an error.
func parseFaults(userText string) faults {
	var f faults
	for _, m := range markerRE.FindAllStringSubmatch(userText, -1) {
		name, value := m[1], m[2]
		switch name {
		case "fault":
			f.setFault(value)
		case "first_token_ms":
			f.firstToken = millis(value)
		case "pace_ms":
			f.pace = millis(value)
		case "scenario":
			f.scenario = value
		case "flood":
			f.flood, _ = strconv.Atoi(value) // a bad number counts as no flood
		}
	}
	return f
}

// setFault switches on one [[fault:NAME]].
func (f *faults) setFault(name string) {
	switch name {
	case "slow_first_token":
		if f.firstToken == 0 {
			f.firstToken = defaultSlowFirstToken
		}
	case "mid_stream_error":
		f.midStream = true
	case "http_429":
		f.http429 = true
	case "http_500":
		f.http500 = true
	case "stall":
		f.stall = true
	case "abrupt_close":
		f.abruptClose = true
	case "broken_xml":
		f.brokenXML = true
	case "wrong_language":
		f.wrongLanguage = true
	case "empty_reply":
		f.emptyReply = true
	case "no_genui":
		f.noGenUI = true
	case "no_patch":
		f.noPatch = true
	case "broken_xml_once", "wrong_language_once", "json_invalid_once", "schema_violation_once", "english_reasoning_once":
		f.once = append(f.once, name)
	case "json_fenced":
		f.skill.fenced = true
	case "json_invalid":
		f.skill.invalid = true
	case "schema_violation":
		f.skill.schemaViolation = true
	case "english_reasoning":
		f.skill.englishReasoning = true
	default:
		if n, ok := strings.CutPrefix(name, "context_incomplete_below:"); ok {
			f.skill.incompleteBelow, _ = strconv.Atoi(n) // a bad number counts as no fault
		}
	}
}

// millis parses a marker's millisecond value; a bad one counts as 0.
func millis(v string) time.Duration {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// maxOnceKeys bounds the memory of *_once markers. Tests use a handful; the bound only
// keeps a long-running demo server from growing.
const maxOnceKeys = 256

// onceTracker remembers which *_once markers have already given their bad reply. A key is
// the marker plus the user's whole message, so the correction retry of one message (same
// text, different instructions) gets the good reply.
type onceTracker struct {
	mu   sync.Mutex
	seen map[string]uint64 // key -> insertion number, for evicting the oldest
	next uint64
}

// bad reports whether this request should get the bad reply: true on the first request
// with key, false on the next, and so on alternately, so a test can be re-run against the
// same server.
func (o *onceTracker) bad(marker, userText string) bool {
	key := marker + "\x00" + userText
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.seen[key]; ok {
		delete(o.seen, key)
		return false
	}
	if o.seen == nil {
		o.seen = make(map[string]uint64)
	}
	if len(o.seen) >= maxOnceKeys {
		o.evictOldest()
	}
	o.next++
	o.seen[key] = o.next
	return true
}

// evictOldest drops the key inserted first. It is linear, and runs only when the bounded
// map is full.
func (o *onceTracker) evictOldest() {
	var (
		oldest string
		first  uint64
	)
	for k, n := range o.seen {
		if first == 0 || n < first {
			oldest, first = k, n
		}
	}
	delete(o.seen, oldest)
}
