package rl

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Sending a call: its deadline, the backend, the one resend when the server
// has lost the command, and the typed result (or the fail mode's decision).

// deadline gives ctx the client's timeout.
func (c *Client) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, c.timeout)
}

type outcome struct {
	r   any
	err error
}

// within runs f, returning by ctx's deadline whatever f does: a Doer that
// ignores its context (or a dial that hangs) cannot hold the caller past it.
// f may go on in the background; its result is then dropped.
func (c *Client) within(ctx context.Context, f func(context.Context) (any, error)) (any, error) {
	done := ctx.Done()
	if done == nil {
		return f(ctx)
	}
	if err := ctx.Err(); err != nil {
		return nil, expired(err)
	}
	ch := make(chan outcome, 1)
	go func() {
		r, err := f(ctx)
		ch <- outcome{r, err}
	}()
	select {
	case o := <-ch:
		if o.err == nil {
			return o.r, nil
		}
		if err := ended(ctx); err != nil {
			// It failed as its context ended (a read that timed out with the
			// deadline, maybe before the context's own timer fired): that is why.
			return nil, expired(err)
		}
		return o.r, o.err
	case <-done:
		return nil, expired(ctx.Err())
	}
}

// ended is why ctx has ended, or nil: its Err, or DeadlineExceeded once its
// deadline has come (the timer that sets Err can fire after a socket deadline
// set to the same instant).
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if deadline, ok := ctx.Deadline(); ok && !time.Now().Before(deadline) {
		return context.DeadlineExceeded
	}
	return nil
}

// expired is the error of a call whose context ended: the deadline (an
// outage, for the fail modes) or the caller's cancellation.
func expired(err error) error {
	if err == context.DeadlineExceeded {
		return fmt.Errorf("rl: no answer before the deadline: %w", err)
	}
	return err
}

// send runs one call within the client's deadline.
func (c *Client) send(ctx context.Context, k *call) (any, error) {
	k.seal()
	if k.err != nil {
		return nil, k.err
	}
	ctx, cancel := c.deadline(ctx)
	defer cancel()
	b, err := c.Backend(ctx)
	if err != nil {
		return nil, err
	}
	r, err := c.sendTo(ctx, k, b)
	if err == nil || c.forced != BackendAuto || !missing(k.cmd, err) {
		return r, err
	}
	// The server no longer has this command or function (restarted without
	// the module, a failover to a node with the other backend): nothing was
	// counted, so detect again and send it once more.
	if b, err = c.Detect(ctx); err != nil {
		return nil, err
	}
	if r, err = c.sendTo(ctx, k, b); err != nil && missing(k.cmd, err) {
		return nil, unsupported(k.cmd, err)
	}
	return r, err
}

func (c *Client) sendTo(ctx context.Context, k *call, b Backend) (any, error) {
	args, err := k.render(b)
	if err != nil {
		return nil, err
	}
	return c.within(ctx, func(ctx context.Context) (any, error) { return c.do.Do(ctx, args...) })
}

// failure types err for k; a connection error under a fail mode becomes a
// decision (ok true).
func (c *Client) failure(k *call, err error) (d Decision, ok bool, out error) {
	err, transport := classify(k.cmd.name, err)
	var nl *NotLoadedError
	if errors.As(err, &nl) && nl.Detail != "" {
		c.forget() // the server lost RL (or another took its place): probe again
	}
	if !transport || c.fail == failError {
		return Decision{}, false, err
	}
	d = c.fallback(c.fail == failOpen, k.limit, k.window, err)
	d.Shadow = k.shadow
	return d, true, nil
}

// fallback is the fail mode's decision (allow or deny) for a limit and
// window, carrying err.
func (c *Client) fallback(allow bool, limit int64, window time.Duration, err error) Decision {
	d := Decision{Limit: limit, Window: window, Unavailable: err}
	if allow {
		d.Allowed, d.Remaining = true, limit
	} else {
		d.RetryAfter, d.ResetAfter = FailClosedRetryAfter, FailClosedRetryAfter
	}
	return d
}

// finishDecision turns a reply (or an error) into k's Decision.
func (c *Client) finishDecision(k *call, r any, err error) (Decision, error) {
	if err != nil {
		d, _, err := c.failure(k, err)
		return d, err
	}
	parse := parseDecision
	if k.cmd.reply == replyThrottle {
		parse = parseThrottle
	}
	d, err := parse(k.cmd.name, r, k.window)
	d.Shadow = k.shadow && err == nil
	return d, err
}

// finishAll turns RL.ALL's reply (or an error) into an AllDecision, each key
// named for the RateLimit fields.
func (c *Client) finishAll(k *call, r any, err error) (AllDecision, error) {
	var out AllDecision
	if err != nil {
		d, ok, err := c.failure(k, err)
		if !ok {
			return AllDecision{}, err
		}
		if firstEnforced(k.keys) < 0 {
			// Only shadow policies: nothing is enforced, the server would allow.
			d = c.fallback(true, k.limit, k.window, d.Unavailable)
		}
		out = AllDecision{Decision: d, Keys: make([]Decision, len(k.keys))}
		for i, p := range k.keys {
			out.Keys[i] = c.fallback(c.fail == failOpen, p.limit, p.window, d.Unavailable)
			out.Keys[i].Shadow = p.shadow
		}
	} else if out, err = parseAll(k.cmd.name, r, k.keys); err != nil {
		return AllDecision{}, err
	}
	out.names = keyNames(k.keys)
	return out, nil
}

func (c *Client) finishReleased(k *call, r any, err error) (bool, error) {
	if err != nil {
		err, _ = classify(k.cmd.name, err)
		return false, err
	}
	return parseReleased(k.cmd.name, r)
}

func (c *Client) decide(ctx context.Context, k *call) (Decision, error) {
	if c.surv != nil {
		return c.decideSurviving(ctx, k)
	}
	r, err := c.send(ctx, k)
	return c.finishDecision(k, r, err)
}

func (c *Client) decideAll(ctx context.Context, k *call) (AllDecision, error) {
	r, err := c.send(ctx, k)
	return c.finishAll(k, r, err)
}

func (c *Client) released(ctx context.Context, k *call) (bool, error) {
	r, err := c.send(ctx, k)
	return c.finishReleased(k, r, err)
}
