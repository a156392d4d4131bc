package rl

import (
	"errors"
	"testing"
	"time"
)

func TestSurvivalCacheBoundedAndFallbackAtLimitOverInstances(t *testing.T) {
	s := &survival{blocked: newLRU(), tats: newLRU(), cacheSize: 2, cacheMax: time.Second, instances: 3, probeEvery: time.Second}
	for _, key := range []string{"k0", "k1", "k2", "k3", "k4"} {
		k := one(cmdGCRA).callGCRA(key, 1, 1, time.Minute, nil).seal()
		tk, ok := s.ticket(k)
		if !ok {
			t.Fatal("RL.GCRA is covered")
		}
		s.answered(tk, Decision{Limit: 1, RetryAfter: time.Minute, ResetAfter: time.Minute})
	}
	if s.blocked.order.Len() != 2 {
		t.Fatalf("%d keys cached, want 2", s.blocked.order.Len())
	}
	if _, ok := s.ticket(one(cmdGCRA).callGCRA("k", 1, 1, time.Minute, []Option{Delay(time.Second)}).seal()); ok {
		t.Fatal("a call with DELAY is not covered")
	}
	tk, _ := s.ticket(one(cmdFixed).callFixed("f", 30, time.Second, []Option{Cost(2)}).seal())
	if tk.kind != "COST" || tk.amount != 2 {
		t.Fatalf("ticket %+v", tk)
	}
	var got []bool
	for i := 0; i < 8; i++ {
		d, _ := s.failed(tk, 30, time.Second, errors.New("down"))
		got = append(got, d.Allowed)
	}
	// 30 / 3 = 10 units a second: five calls of 2.
	want := []bool{true, true, true, true, true, false, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("allowed %v, want %v", got, want)
		}
	}
}
