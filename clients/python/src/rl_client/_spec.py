"""What the generated commands (``_commands``, ``_policies``) stand on: a command's two
wire forms, its reply kinds (the parser and the decision the fail modes make up), the
window of a bucket, and RL.ALL's policies."""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Iterable, Mapping, NamedTuple, Optional, Union

from ._arguments import Key, Option, flags, options
from ._errors import ArgumentError, UnsupportedCommandError
from ._types import AllDecision, Decision, Throttle

#: A command's checked arguments after the key, the reply's limit and its window (ms).
Shape = tuple[tuple[object, ...], int, Optional[int]]

#: A policy's shape function (``_gcra``...), the options it takes in RL.ALL after its
#: arguments and the flags it takes before its word.
Form = tuple[Callable[..., Shape], tuple[Option, ...], tuple[Option, ...]]

#: The flag that makes a call (or an RL.ALL policy) tried, not enforced: its decisions
#: say so (``Decision.shadow``), give no HTTP fields and skip the blocked-key cache
#: and the fallback limiter.
SHADOW = "SHADOW"


class Submitter:
    """What every generated command method does once its positional arguments are
    checked (``shape``): add the options given (``values``: one per row of ``table``,
    None when left out) and the flags that are on (``on``: one bool per row of
    ``flag_table``), then hand the call to ``_submit``."""

    __slots__ = ()

    def _submit(self, spec: Spec, key: Any, args: tuple[object, ...], meta: Any, limit: Any) -> Any:
        raise NotImplementedError

    def _command(
        self, spec: Spec, key: Any, shape: tuple[tuple[object, ...], Any, Any], table: tuple[Option, ...],
        values: tuple[object, ...], flag_table: tuple[Option, ...] = (), on: tuple[object, ...] = (),
    ) -> Any:
        args, limit, meta = shape
        # One C call in the common case, when no option is given.
        if values.count(None) != len(values):
            args += options(table, values)
        # `on` is empty when every flag is off (the generated method checks them).
        if on:
            words = flags(flag_table, on)
            args += words
            if SHADOW in words:
                spec = spec.shadowed
        return self._submit(spec, key, args, meta, limit)


#: The longest refill time reported (ms, about 292 years); the same in every RL client.
MAX_REFILL_MS = 9_223_372_036_854


def refill_ms(capacity: int, tokens: int, period_ms: int) -> int:
    """A bucket's window for ``RateLimit-Policy``: the time it takes to refill from empty,
    ``ceil(capacity * period / tokens)`` ms (at most ``MAX_REFILL_MS``), so that ``q=capacity``
    per it never advertises more than the sustained rate."""
    ms = -(-(capacity * period_ms) // tokens)
    return ms if ms < MAX_REFILL_MS else MAX_REFILL_MS


# ---- replies, and what the fail modes answer instead --------------------------------
# When Redis does not answer in time and the fail mode is "allow": allowed, remaining =
# limit, retry_after = reset_after = 0; "deny": rejected, remaining 0, retry_after =
# reset_after = 1 s. Either carries the error.

DENY_MS = 1000


def _decision(reply: Any, window: Any) -> Decision:
    allowed, limit, remaining, retry, reset = reply
    # Every field positionally: measurably faster than leaving the default.
    return Decision(allowed == 1, limit, remaining, retry if retry >= 0 else None, reset, window, None)


def _made_decision(allow: bool, window: Any, limit: Any, err: BaseException) -> Decision:
    if allow:
        return Decision(True, limit, limit, 0, 0, window, err)
    return Decision(False, limit, 0, DENY_MS, DENY_MS, window, err)


def _throttle(reply: Any, window: Any) -> Throttle:
    limited, limit, remaining, retry, reset = reply
    return Throttle(limited == 1, limit, remaining, retry if retry >= 0 else None, reset, window, None)


def _made_throttle(allow: bool, window: Any, limit: Any, err: BaseException) -> Throttle:
    if allow:
        return Throttle(False, limit, limit, None, 0, window, err)
    return Throttle(True, limit, 0, DENY_MS // 1000, DENY_MS // 1000, window, err)


def _combined(decisions: list[Decision], combined: Decision) -> Decision:
    # The combined limit and remaining are those of the first key (among ``decisions``,
    # the ones it is made of) with the smallest remaining: its window is the policy's.
    for d in decisions:
        if d.remaining == combined.remaining and d.limit == combined.limit:
            combined.window = d.window
            break
    return combined


def _enforced(decisions: list[Decision], shadows: list[bool]) -> list[Decision]:
    """Flags the decisions of shadow policies; the others, which the combined decision is
    made of (all of them when every policy is shadow, as the server does)."""
    for d, shadow in zip(decisions, shadows):
        d.shadow = shadow
    return [d for d in decisions if not d.shadow] or decisions


def _all(reply: Any, meta: Any) -> AllDecision:
    keys, windows, words, shadows = meta
    decisions = [_decision(r, w) for r, w in zip(reply[1:], windows)]
    combined = _combined(_enforced(decisions, shadows), _decision(reply[0], None))
    return AllDecision(combined, decisions, list(keys), list(words))


def _made_all(allow: bool, meta: Any, limits: Any, err: BaseException) -> AllDecision:
    keys, windows, words, shadows = meta
    decisions = [_made_decision(allow, w, n, err) for n, w in zip(limits, windows)]
    enforced = _enforced(decisions, shadows)
    tightest = min(enforced, key=lambda d: d.remaining) if enforced else _made_decision(allow, None, 0, err)
    # A call with only shadow policies is never rejected (nothing is enforced), as the
    # server answers it.
    combined = _made_decision(allow or all(shadows), tightest.window, tightest.limit, err)
    return AllDecision(_combined(enforced, combined), decisions, list(keys), list(words))


def _released(reply: Any, _meta: Any) -> bool:
    return bool(reply == 1)


def _made_release(allow: bool, meta: Any, limit: Any, err: BaseException) -> bool:
    # Whether a lease was released cannot be made up.
    raise err


class Reply(NamedTuple):
    """A reply kind: how a reply becomes a result, and the result the fail modes give."""

    parse: Callable[[Any, Any], Any]
    made_up: Callable[[bool, Any, Any, BaseException], Any]


#: Each reply kind of commands.json.
REPLIES = {
    "decision": Reply(_decision, _made_decision),
    "throttle": Reply(_throttle, _made_throttle),
    "all": Reply(_all, _made_all),
    "released": Reply(_released, _made_release),
}


def _flag_shadow(reply: Reply) -> Reply:
    """A reply kind whose results (the server's, or the fail mode's) say they are shadow."""

    def parse(r: Any, meta: Any) -> Any:
        d = reply.parse(r, meta)
        d.shadow = True
        return d

    def made_up(allow: bool, meta: Any, limit: Any, err: BaseException) -> Any:
        d = reply.made_up(allow, meta, limit, err)
        d.shadow = True
        return d

    return Reply(parse, made_up)


#: The reply kinds of the commands that take SHADOW, as a shadow call gets them.
SHADOW_REPLIES = {"decision": _flag_shadow(REPLIES["decision"])}


class Spec:
    """One RL command: its module name, its library function and its reply."""

    __slots__ = (
        "name", "wire_name", "function", "parse", "made_up", "counted", "module_prefix", "library_prefix", "shadow",
        "shadowed",
    )

    def __init__(
        self, name: str, function: Optional[str], reply: str, counted: bool = False, shadow: bool = False
    ) -> None:
        self.name = name
        #: The module's name as sent on a pipeline's hot path (encoded once).
        self.wire_name = name.encode()
        self.function = function
        self.parse, self.made_up = (SHADOW_REPLIES if shadow else REPLIES)[reply]
        self.counted = counted
        #: Whether its calls are sent with SHADOW (then ``shadowed`` is itself).
        self.shadow = shadow
        #: The same command as a call with SHADOW makes it: its decisions flagged shadow.
        self.shadowed: Spec = self
        if not shadow and reply in SHADOW_REPLIES:
            self.shadowed = Spec(name, function, reply, counted, shadow=True)
        self.module_prefix: tuple[object, ...] = (name,)
        self.library_prefix: tuple[object, ...] = ("FCALL", function) if counted else ("FCALL", function, 1)

    def prefix(self, backend: str) -> tuple[object, ...]:
        """``RL.X`` or ``FCALL rl_x 1`` (``FCALL rl_all``: RL.ALL counts its keys)."""
        if backend == "module":
            return self.module_prefix
        if self.function is None:
            raise UnsupportedCommandError(
                f"{self.name} has no Functions library form: the server has RL's library, not the module"
            )
        return self.library_prefix

    def command(self, backend: str, key: Any, args: tuple[object, ...]) -> tuple[object, ...]:
        """The command to send: ``RL.X key args...`` or ``FCALL rl_x 1 key args...``;
        ``key`` is a tuple of keys for RL.ALL (``RL.ALL numkeys keys... args...``)."""
        if self.counted:
            return self.prefix(backend) + (len(key),) + tuple(key) + args
        return self.prefix(backend) + (key,) + args


# ---- RL.ALL's policies ---------------------------------------------------------------


class Policy:
    """One key's policy in ``RateLimiter.all`` (``Fixed``, ``Gcra``... generated from the
    command table): a frozen dataclass whose fields are the policy's arguments, then its
    options, then its flags (``shadow``). Checked when made, against the same ranges as
    its command."""

    __slots__ = ()

    #: The policy's word in RL.ALL.
    word: ClassVar[str]

    #: Its command's shape function, its options' table and its flags' table, from the
    #: command table.
    _form: ClassVar[Form]

    def __post_init__(self) -> None:
        self._compile()

    def _compile(self) -> Shape:
        """(its words in RL.ALL, its limit, its window in ms or None): the fields are the
        shape function's arguments, then the options, then the flags (whose words go
        before the policy's word)."""
        shape, table, flag_table = self._form
        names: tuple[str, ...] = self.__slots__
        values = tuple(getattr(self, name) for name in names)
        end = len(values) - len(flag_table)
        split = end - len(table)
        args, limit, window = shape(*values[:split])
        args = (*flags(flag_table, values[end:]), self.word, *args)
        given = values[split:end]
        if given.count(None) != len(given):
            args += options(table, given)
        return args, limit, window

    def _shadow(self, args: tuple[object, ...]) -> bool:
        """Whether its words (``_compile``'s) make it a shadow policy."""
        return SHADOW in args[: args.index(self.word)]

    def args(self) -> list[object]:
        """The policy's words, as RL.ALL takes them."""
        return list(self._compile()[0])

    def quota(self) -> tuple[int, Optional[int]]:
        """(its limit, its window in ms or None: for a bucket, its refill time)."""
        _, limit, window = self._compile()
        return limit, window


#: ``{key: policy}`` or ``[(key, policy), ...]``, in key order.
Policies = Union[
    Mapping[str, Policy],
    Mapping[bytes, Policy],
    Mapping[Key, Policy],
    Iterable[tuple[str, Policy]],
    Iterable[tuple[bytes, Policy]],
    Iterable[tuple[Key, Policy]],
]


def gather(policies: Policies) -> tuple[tuple[Key, ...], tuple[object, ...], Any, list[int]]:
    """RL.ALL's keys, its words after them, what its reply parser needs (the keys, each
    policy's window, word and whether it is shadow) and each policy's limit."""
    items: list[tuple[Key, Policy]] = list(policies.items() if isinstance(policies, Mapping) else policies)
    if not items:
        raise ArgumentError("RL.ALL takes at least one policy")
    keys = tuple(k for k, _ in items)
    words: tuple[object, ...] = ()
    limits: list[int] = []
    windows: list[Optional[int]] = []
    shadows: list[bool] = []
    for _, policy in items:
        if not isinstance(policy, Policy):
            raise ArgumentError(f"RL.ALL takes Policy objects (Fixed, Gcra, ...), not {policy!r}")
        args, limit, window = policy._compile()
        words += args
        limits.append(limit)
        windows.append(window)
        shadows.append(policy._shadow(args))
    return keys, words, (keys, windows, [p.word for _, p in items], shadows), limits
