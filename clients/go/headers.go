package rl

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names set by Headers, SetHeaders and HeaderPairs.
const (
	HeaderRateLimitPolicy     = "RateLimit-Policy"
	HeaderRateLimit           = "RateLimit"
	HeaderRetryAfter          = "Retry-After"
	HeaderXRateLimitLimit     = "X-RateLimit-Limit"
	HeaderXRateLimitRemaining = "X-RateLimit-Remaining"
	HeaderXRateLimitReset     = "X-RateLimit-Reset"
)

// DefaultPolicyName is the policy's name in the RateLimit fields unless the
// decision is Named.
const DefaultPolicyName = "default"

// maxFieldInteger is the largest integer a structured field can carry: larger
// numbers are given as it.
const maxFieldInteger = 999_999_999_999_999

// NamedDecision is a Decision whose policy has a name in its RateLimit
// fields (see Decision.Named).
type NamedDecision struct {
	Decision
	name string
}

// Named gives the decision's policy a name in its RateLimit fields
// ("default" without it). The name is sent as a structured-field string,
// `"` and `\` escaped; a name with a byte outside printable ASCII is refused
// with an *ArgumentError.
func (d Decision) Named(name string) (NamedDecision, error) {
	if err := checkName(name); err != nil {
		return NamedDecision{}, &ArgumentError{Command: "Named", Message: err.Error()}
	}
	return NamedDecision{d, name}, nil
}

// Name is the policy's name in the RateLimit fields.
func (n NamedDecision) Name() string { return n.name }

// HeaderPairs gives the decision's fields (see Decision.HeaderPairs) under its name.
func (n NamedDecision) HeaderPairs() [][2]string {
	return n.pairs(n.policyItem(n.name), n.limitItem(n.name))
}

// SetHeaders sets the decision's fields under its name on h.
func (n NamedDecision) SetHeaders(h http.Header) { setPairs(h, n.HeaderPairs()) }

// Headers gives the decision's fields under its name.
func (n NamedDecision) Headers() http.Header { return headersOf(n.HeaderPairs()) }

func checkName(name string) error {
	for i := 0; i < len(name); i++ {
		if name[i] < 0x20 || name[i] > 0x7e {
			return fmt.Errorf("policy name %q has a byte outside printable ASCII", name)
		}
	}
	return nil
}

var nameEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`)

// fieldInt is n as a structured-field integer, clamped to its range.
func fieldInt(n int64) string {
	switch {
	case n > maxFieldInteger:
		n = maxFieldInteger
	case n < -maxFieldInteger:
		n = -maxFieldInteger
	}
	return strconv.FormatInt(n, 10)
}

// policyItem is the decision's member of RateLimit-Policy:
// "name";q=<limit>;w=<window s>, w left out when unknown.
func (d Decision) policyItem(name string) string {
	s := `"` + nameEscaper.Replace(name) + `";q=` + fieldInt(d.Limit)
	if d.Window > 0 {
		s += ";w=" + fieldInt(ceilSeconds(d.Window))
	}
	return s
}

// limitItem is the decision's member of RateLimit: "name";r=<remaining>;t=<reset s>.
func (d Decision) limitItem(name string) string {
	return `"` + nameEscaper.Replace(name) + `";r=` + fieldInt(d.Remaining) + ";t=" + fieldInt(ceilSeconds(d.ResetAfter))
}

// HeaderPairs gives the HTTP fields of this decision, names spelled as above,
// in this order:
//
//	RateLimit-Policy: "<name>";q=<limit>;w=<ceil(Window s)>   (w only when known)
//	RateLimit: "<name>";r=<remaining>;t=<ceil(reset_after s)>
//	Retry-After: <ceil(retry_after s)>        (only when rejected and retryable)
//	X-RateLimit-Limit: <limit>
//	X-RateLimit-Remaining: <remaining>
//	X-RateLimit-Reset: <ceil(reset_after s)>
//
// The RateLimit fields follow the IETF draft draft-ietf-httpapi-ratelimit-headers;
// the name is "default" unless the decision is Named. A Shadow decision gives
// none: its limit is not in force, so nobody is told of it or told to wait.
func (d Decision) HeaderPairs() [][2]string {
	return d.pairs(d.policyItem(DefaultPolicyName), d.limitItem(DefaultPolicyName))
}

// pairs gives the fields with the RateLimit lists given and the rest from d;
// none for a Shadow decision.
func (d Decision) pairs(policy, limit string) [][2]string {
	if d.Shadow {
		return nil
	}
	reset := strconv.FormatInt(ceilSeconds(d.ResetAfter), 10)
	out := make([][2]string, 0, 6)
	out = append(out, [2]string{HeaderRateLimitPolicy, policy}, [2]string{HeaderRateLimit, limit})
	if !d.Allowed && d.RetryAfter != Never {
		out = append(out, [2]string{HeaderRetryAfter, strconv.FormatInt(ceilSeconds(d.RetryAfter), 10)})
	}
	return append(out,
		[2]string{HeaderXRateLimitLimit, strconv.FormatInt(d.Limit, 10)},
		[2]string{HeaderXRateLimitRemaining, strconv.FormatInt(d.Remaining, 10)},
		[2]string{HeaderXRateLimitReset, reset})
}

// SetHeaders sets this decision's fields (see HeaderPairs) on h, replacing
// any earlier values, and removes a Retry-After this decision does not give.
// net/http stores names in canonical form ("Ratelimit-Policy"); HTTP field
// names are case-insensitive, and HTTP/2 and HTTP/3 send them in lower case.
func (d Decision) SetHeaders(h http.Header) { setPairs(h, d.HeaderPairs()) }

// Headers gives this decision's fields (see HeaderPairs) as an http.Header.
func (d Decision) Headers() http.Header { return headersOf(d.HeaderPairs()) }

// HeaderPairs gives RL.ALL's fields: RateLimit-Policy and RateLimit with one
// member per enforced key (Shadow ones are left out), named by its policy
// (Policy.Named, else its word in lower case, "-N" after it, its position
// among all the call's policies from 1, when the call has that word more than
// once), each with its own key's numbers; Retry-After and the X-RateLimit
// fields from the combined decision. A call with only Shadow policies gives
// none.
func (a AllDecision) HeaderPairs() [][2]string {
	policy := make([]string, 0, len(a.Keys))
	limit := make([]string, 0, len(a.Keys))
	for i, k := range a.Keys {
		if k.Shadow {
			continue
		}
		name := DefaultPolicyName
		if i < len(a.names) {
			name = a.names[i]
		}
		policy, limit = append(policy, k.policyItem(name)), append(limit, k.limitItem(name))
	}
	if len(policy) == 0 {
		return nil
	}
	return a.Decision.pairs(strings.Join(policy, ", "), strings.Join(limit, ", "))
}

// SetHeaders sets RL.ALL's fields (see AllDecision.HeaderPairs) on h.
func (a AllDecision) SetHeaders(h http.Header) { setPairs(h, a.HeaderPairs()) }

// Headers gives RL.ALL's fields (see AllDecision.HeaderPairs).
func (a AllDecision) Headers() http.Header { return headersOf(a.HeaderPairs()) }

func setPairs(h http.Header, pairs [][2]string) {
	h.Del(HeaderRetryAfter)
	for _, kv := range pairs {
		h.Set(kv[0], kv[1])
	}
}

func headersOf(pairs [][2]string) http.Header {
	h := make(http.Header, len(pairs))
	setPairs(h, pairs)
	return h
}

// keyNames names RL.ALL's keys after their policies.
func keyNames(policies []Policy) []string {
	count := make(map[string]int, len(policies))
	for _, p := range policies {
		count[p.word]++
	}
	names := make([]string, len(policies))
	for i, p := range policies {
		switch {
		case p.name != "":
			names[i] = p.name
		case count[p.word] > 1:
			names[i] = strings.ToLower(p.word) + "-" + strconv.Itoa(i+1)
		default:
			names[i] = strings.ToLower(p.word)
		}
	}
	return names
}

// ceilSeconds is ceil(d / 1s) for d >= 0, 0 below.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}
