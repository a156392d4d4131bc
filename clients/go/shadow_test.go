package rl

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Shadow: the flag's place on the wire, the decisions it flags, the fields it
// takes away, and the calls it keeps away from the cache and the fallback.

func TestShadowSentAfterTheArgumentsAndFlagged(t *testing.T) {
	f := &fake{module: true}
	f.reply = func([]any) (any, error) { return decisionReply(0, 5, 0, 1000, 5000), nil }
	c := New(f)
	d, err := c.GCRA(bg, "k", 5, 1, time.Second, Shadow(), Cost(2))
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"RL.GCRA", "k", int64(5), int64(1), "1000ms", "SHADOW", "COST", int64(2)}
	if got := f.last(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %v, want %v", got, want)
	}
	// What the limit decided, flagged: "would have rejected".
	if !d.Shadow || d.Allowed || d.Limit != 5 || d.RetryAfter != time.Second || !strings.Contains(d.String(), "(shadow)") {
		t.Fatalf("decision %+v", d)
	}
	if len(d.HeaderPairs()) != 0 || len(d.Headers()) != 0 {
		t.Fatalf("a shadow decision gave fields %v", d.HeaderPairs())
	}
	named, err := d.Named("api")
	if err != nil || len(named.HeaderPairs()) != 0 {
		t.Fatalf("a named shadow decision gave fields %v (%v)", named.HeaderPairs(), err)
	}
	// The same call without the flag is enforced, and has its fields.
	if d, _ = c.GCRA(bg, "k", 5, 1, time.Second); d.Shadow || len(d.HeaderPairs()) == 0 {
		t.Fatalf("enforced decision %+v, fields %v", d, d.HeaderPairs())
	}
	// The library takes the same word.
	f.module, f.library = false, true
	c = New(f)
	if d, err = c.Quota(bg, "q", 10, "day", Shadow()); err != nil || !d.Shadow {
		t.Fatalf("library: %+v %v", d, err)
	}
	if got := f.last(); !reflect.DeepEqual(got, []any{"FCALL", "rl_quota", int64(1), "q", int64(10), "day", "SHADOW"}) {
		t.Fatalf("library sent %v", got)
	}
	// Pipelined.
	p := c.Pipeline()
	q := p.Fixed("f", 3, time.Minute, Shadow())
	e := p.Fixed("f", 3, time.Minute)
	if err := p.Exec(bg); err != nil {
		t.Fatal(err)
	}
	if d, err := q.Result(); err != nil || !d.Shadow {
		t.Fatalf("pipelined shadow: %+v %v", d, err)
	}
	if d, err := e.Result(); err != nil || d.Shadow {
		t.Fatalf("pipelined enforced: %+v %v", d, err)
	}
}

func TestShadowPoliciesBeforeTheirWordAndLeftOutOfTheFields(t *testing.T) {
	f := &fake{module: true}
	f.reply = func([]any) (any, error) {
		return []any{
			decisionReply(1, 50, 48, 0, 2000),
			decisionReply(0, 50, 48, 60000, 60000), // a shadow key with the combined numbers
			decisionReply(1, 50, 48, 0, 2000),
			decisionReply(1, 2, 1, 0, 10000),
		}, nil
	}
	c := New(f)
	checks := []KeyPolicy{
		Key("{u}:a", GCRA(1, 1, time.Minute, Delay(time.Second), Shadow())),
		Key("{u}:b", GCRA(50, 1, time.Second)),
		Key("{u}:c", Acquire(2, 10*time.Second, "job", Shadow())),
	}
	d, err := c.All(bg, checks)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{"RL.ALL", int64(3), "{u}:a", "{u}:b", "{u}:c",
		"SHADOW", "GCRA", int64(1), int64(1), "60000ms", "DELAY", "1000ms",
		"GCRA", int64(50), int64(1), "1000ms",
		"SHADOW", "ACQUIRE", int64(2), "10000ms", "job"}
	if got := f.last(); !reflect.DeepEqual(got, want) {
		t.Fatalf("sent %v\nwant %v", got, want)
	}
	if d.Shadow || !d.Keys[0].Shadow || d.Keys[1].Shadow || !d.Keys[2].Shadow || d.Keys[0].Allowed {
		t.Fatalf("decision %+v", d)
	}
	// The combined window is the enforced key's, not the shadow one's with the same numbers.
	if d.Window != 50*time.Second {
		t.Fatalf("combined window %s", d.Window)
	}
	// Only the enforced member, named by its place among all the policies.
	h := d.Headers()
	if h.Get(HeaderRateLimitPolicy) != `"gcra-2";q=50;w=50` || h.Get(HeaderRateLimit) != `"gcra-2";r=48;t=2` || h.Get(HeaderRetryAfter) != "" {
		t.Fatalf("fields %v", d.HeaderPairs())
	}
	// Only shadow policies: nothing is enforced, no fields.
	f.reply = func([]any) (any, error) {
		return []any{decisionReply(1, 1, 0, 0, 60000), decisionReply(0, 1, 0, 60000, 60000)}, nil
	}
	d, err = c.All(bg, []KeyPolicy{Key("s", Fixed(1, time.Minute, Shadow()))})
	if err != nil || !d.Allowed || !d.Keys[0].Shadow || len(d.HeaderPairs()) != 0 {
		t.Fatalf("only shadow: %+v %v, fields %v", d, err, d.HeaderPairs())
	}
}

func TestShadowRefusedBeforeSending(t *testing.T) {
	f := &fake{module: true}
	c := New(f)
	cases := []struct {
		what string
		call func() error
		says string
	}{
		{"twice", func() error { _, err := c.Sliding(bg, "k", 1, time.Second, Shadow(), Shadow()); return err }, "SHADOW given twice"},
		{"twice on a policy", func() error {
			_, err := c.All(bg, []KeyPolicy{Key("a", Bucket(1, 1, time.Second, Shadow(), Shadow()))})
			return err
		}, "SHADOW given twice"},
		{"on RL.ALL itself", func() error {
			_, err := c.All(bg, []KeyPolicy{Key("a", Bucket(1, 1, time.Second))}, Shadow())
			return err
		}, "SHADOW does not apply to RL.ALL"},
	}
	for _, tc := range cases {
		var ae *ArgumentError
		if err := tc.call(); !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s: %v, want an *ArgumentError saying %q", tc.what, err, tc.says)
		}
	}
	if n := f.count("RL.SLIDING") + f.count("RL.ALL"); n != 0 {
		t.Fatalf("%d refused calls sent", n)
	}
}

func TestShadowFailModes(t *testing.T) {
	down := errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
	c := New(&fake{down: down}, WithFailClosed())
	d, err := c.GCRA(bg, "k", 5, 1, time.Second, Shadow())
	if err != nil || d.Allowed || !d.Shadow || d.Unavailable != down || len(d.HeaderPairs()) != 0 {
		t.Fatalf("closed shadow: %+v %v", d, err)
	}
	// RL.ALL's made-up combined decision is the enforced policies'.
	a, err := c.All(bg, []KeyPolicy{Key("a", Fixed(3, time.Minute, Shadow())), Key("b", GCRA(50, 1, time.Second))})
	if err != nil || a.Allowed || a.Shadow || a.Limit != 50 || a.Window != 50*time.Second ||
		!a.Keys[0].Shadow || a.Keys[0].Allowed || a.Keys[1].Shadow {
		t.Fatalf("closed RL.ALL: %+v %v", a, err)
	}
	// Only shadow policies: the server would allow whatever they say.
	a, err = c.All(bg, []KeyPolicy{Key("a", Fixed(3, time.Minute, Shadow()))})
	if err != nil || !a.Allowed || a.Limit != 3 || a.Keys[0].Allowed || !a.Keys[0].Shadow || len(a.HeaderPairs()) != 0 {
		t.Fatalf("closed RL.ALL, only shadow: %+v %v", a, err)
	}
	// The fallback limiter never decides a shadow call: the fail mode does.
	c = New(&fake{down: down}, WithFallback(2, time.Hour))
	if _, err := c.GCRA(bg, "k", 5, 1, time.Second, Shadow()); err != down {
		t.Fatalf("shadow with a fallback and no fail mode: %v, want the error", err)
	}
	if d, err := c.GCRA(bg, "k", 5, 1, time.Second); err != nil || d.Unavailable == nil || d.Limit != 2 {
		t.Fatalf("enforced with a fallback: %+v %v", d, err)
	}
}

func TestShadowCallsBypassTheCache(t *testing.T) {
	f := &fake{module: true}
	f.reply = func([]any) (any, error) { return decisionReply(0, 1, 0, 60000, 60000), nil }
	c := New(f, WithCache(10, time.Minute))
	for i := 0; i < 5; i++ {
		d, err := c.Fixed(bg, "k", 1, time.Minute, Shadow())
		if err != nil || d.Allowed || !d.Shadow || d.Cached {
			t.Fatalf("shadow call %d: %+v %v", i, d, err)
		}
	}
	if n := f.count("RL.FIXED"); n != 5 {
		t.Fatalf("%d of 5 shadow calls reached the server", n)
	}
	// Their rejections were not cached: the enforced call asks the server,
	// and its own rejection is.
	for i := 0; i < 3; i++ {
		if d, err := c.Fixed(bg, "k", 1, time.Minute); err != nil || d.Allowed || d.Shadow || d.Cached != (i > 0) {
			t.Fatalf("enforced call %d: %+v %v", i, d, err)
		}
	}
	if n := f.count("RL.FIXED"); n != 6 {
		t.Fatalf("%d calls reached the server, want 6", n)
	}
	// A cached rejection does not answer a shadow call either.
	if d, err := c.Fixed(bg, "k", 1, time.Minute, Shadow()); err != nil || d.Cached || f.count("RL.FIXED") != 7 {
		t.Fatalf("shadow after a cached rejection: %+v %v", d, err)
	}
}
