package rl

import (
	"fmt"
	"math/bits"
	"strconv"
	"strings"
	"time"
)

// ParseDuration reads a duration as RL's commands write one: an integer with an
// optional unit ms, s, m, h or d, case-insensitive, a bare integer meaning
// seconds ("1500ms", "60", "1m", "24h", "7d"). Anything time.ParseDuration
// reads ("1m30s", "1.5s") is accepted too, if it is a whole number of
// milliseconds ("1.5ms" is refused, never rounded). A refused string is an
// *ArgumentError. Every method takes a time.Duration; this is for limits kept
// as text (configuration files, flags).
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	digits := 0
	for digits < len(t) && t[digits] >= '0' && t[digits] <= '9' {
		digits++
	}
	if digits > 0 && digits <= 15 {
		n, err := strconv.ParseInt(t[:digits], 10, 64)
		if err == nil {
			var unit time.Duration
			switch strings.ToLower(t[digits:]) {
			case "", "s":
				unit = time.Second
			case "ms":
				unit = time.Millisecond
			case "m":
				unit = time.Minute
			case "h":
				unit = time.Hour
			case "d":
				unit = 24 * time.Hour
			}
			if unit != 0 {
				if n > int64(1<<63-1)/int64(unit) {
					return 0, durationError(s, "is too long")
				}
				return time.Duration(n) * unit, nil
			}
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, durationError(s, "is not a duration: an integer with an optional unit ms, s, m, h or d (a bare integer means seconds), or a Go duration such as 1m30s")
	}
	if d%time.Millisecond != 0 {
		return 0, durationError(s, "is not a whole number of milliseconds")
	}
	return d, nil
}

func durationError(s, why string) error {
	return &ArgumentError{Command: "ParseDuration", Message: strconv.Quote(s) + " " + why}
}

// MustDuration is ParseDuration for constants: it panics on a string that is
// not a duration, like regexp.MustCompile.
func MustDuration(s string) time.Duration {
	d, err := ParseDuration(s)
	if err != nil {
		panic(err)
	}
	return d
}

// msArg renders d as RL reads it, "<n>ms", or says why r refuses it: not a
// whole number of milliseconds (never rounded), or outside r's range.
func msArg(r *rule, d time.Duration) (string, string) {
	if d%time.Millisecond != 0 {
		if d > 0 && d < time.Millisecond {
			// Most likely a bare number meant as seconds, as RL reads one.
			return "", fmt.Sprintf("must be a whole number of milliseconds, got %v (a time.Duration counts nanoseconds: for %d seconds write %d*time.Second)", d, int64(d), int64(d))
		}
		return "", fmt.Sprintf("must be a whole number of milliseconds, got %v", d)
	}
	ms := int64(d / time.Millisecond)
	var buf [24]byte
	b := strconv.AppendInt(buf[:0], ms, 10)
	b = append(b, 'm', 's')
	if ms < r.min || ms > r.max {
		return string(b), fmt.Sprintf("must be from %dms to %dms, got %v", r.min, r.max, d)
	}
	return string(b), ""
}

// maxRefillMs is the longest refill time reported, in ms (about 292 years, the
// most whole milliseconds a time.Duration holds); the same in every RL client.
const maxRefillMs = int64(1<<63-1) / int64(time.Millisecond)

// refillWindow is a bucket's window for RateLimit-Policy: the time a bucket of
// capacity, refilled by tokens per period, takes to refill from empty,
// ceil(capacity * period / tokens) in whole ms (at most maxRefillMs), so that
// q=capacity per it never advertises more than the sustained rate. The period
// itself when the counts are not positive (the server refuses such a call).
func refillWindow(capacity, tokens int64, period time.Duration) time.Duration {
	if capacity < 1 || tokens < 1 || period < 0 {
		return period
	}
	hi, lo := bits.Mul64(uint64(capacity), uint64(period/time.Millisecond))
	t := uint64(tokens)
	if hi >= t {
		// The quotient does not fit 64 bits.
		return time.Duration(maxRefillMs) * time.Millisecond
	}
	q, r := bits.Div64(hi, lo, t)
	if q >= uint64(maxRefillMs) {
		return time.Duration(maxRefillMs) * time.Millisecond
	}
	if r != 0 {
		q++
	}
	return time.Duration(q) * time.Millisecond
}

// msDuration converts a reply's ms to a Duration, saturating (RL caps its
// times at 2^53-1 ms, which is more than a Duration holds).
func msDuration(ms int64) time.Duration {
	const max = int64(1<<63-1) / int64(time.Millisecond)
	if ms > max {
		return time.Duration(1<<63 - 1)
	}
	return time.Duration(ms) * time.Millisecond
}
