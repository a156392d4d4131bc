"""What the sync and asyncio limiters share: commands, their two wire forms (module
or Functions library), reply parsing, and the typed API written once."""

from __future__ import annotations

from typing import (
    Any,
    Callable,
    Generator,
    Generic,
    Iterable,
    Literal,
    Mapping,
    NoReturn,
    Optional,
    TypeVar,
    Union,
)

from ._errors import (
    CONNECTION_ERRORS,
    NOT_LOADED_HELP,
    ArgumentError,
    NotLoadedError,
    RLError,
    UnsupportedCommandError,
    translate,
)
from ._types import AllDecision, Decision, Duration, Key, Policy, Throttle, duration, refill_ms

Backend = Literal["module", "library"]
OnConnectionError = Literal["raise", "allow", "deny"]

# ---- replies -------------------------------------------------------------------------


def _decision(reply: Any, window: Any) -> Decision:
    allowed, limit, remaining, retry, reset = reply
    # Every field positionally: measurably faster than leaving the default.
    return Decision(allowed == 1, limit, remaining, retry if retry >= 0 else None, reset, window, None)


def _throttle(reply: Any, window: Any) -> Throttle:
    limited, limit, remaining, retry, reset = reply
    return Throttle(limited == 1, limit, remaining, retry if retry >= 0 else None, reset, window, None)


def _all(reply: Any, meta: Any) -> AllDecision:
    keys, windows = meta
    decisions = [_decision(r, w) for r, w in zip(reply[1:], windows)]
    combined = _decision(reply[0], None)
    # The combined limit and remaining are those of the first key with the smallest
    # remaining: its window is the policy's.
    for d in decisions:
        if d.remaining == combined.remaining and d.limit == combined.limit:
            combined.window = d.window
            break
    return AllDecision(combined, decisions, list(keys))


def _released(reply: Any, _window: Any) -> bool:
    return bool(reply == 1)


def _fallback_decision(allowed: bool, limit: int, window: Optional[int], err: BaseException) -> Decision:
    if allowed:
        return Decision(True, limit, limit, 0, 0, window, err)
    return Decision(False, limit, 0, None, 0, window, err)


def fallback(parse: Any, allowed: bool, meta: Any, limit: Any, err: BaseException) -> Any:
    """The decision given when Redis did not answer and the caller chose to allow or deny
    (``parse``: the call's reply parser, which tells what it answers)."""
    if parse is _decision:
        return _fallback_decision(allowed, limit, meta, err)
    if parse is _throttle:
        return Throttle(not allowed, limit, limit if allowed else 0, None, 0, meta, err)
    if parse is _all:
        keys, windows = meta
        decisions = [_fallback_decision(allowed, n, w, err) for n, w in zip(limit, windows)]
        first = min(decisions, key=lambda d: d.remaining)
        combined = _fallback_decision(allowed, first.limit, first.window, err)
        if allowed:
            combined.remaining = first.remaining
        return AllDecision(combined, decisions, list(keys))
    raise err


# ---- commands ------------------------------------------------------------------------


class Spec:
    """One RL command: its module name, its library function and its reply."""

    __slots__ = ("name", "function", "counted", "parse", "module_prefix", "library_prefix")

    def __init__(
        self,
        name: str,
        function: Optional[str],
        parse: Callable[[Any, Any], Any],
        counted: bool = False,
    ) -> None:
        self.name = name
        self.function = function
        self.parse = parse
        self.counted = counted
        self.module_prefix: tuple[object, ...] = (name,)
        self.library_prefix: tuple[object, ...] = (
            ("FCALL", function) if counted else ("FCALL", function, 1)
        )

    def command(self, backend: str, key: Any, args: tuple[object, ...]) -> tuple[object, ...]:
        """The command to send: ``RL.X key args...`` or ``FCALL rl_x 1 key args...``;
        ``key`` is a tuple of keys for RL.ALL (``RL.ALL numkeys keys... args...``)."""
        if backend == "module":
            prefix = self.module_prefix
        elif self.function is None:
            raise UnsupportedCommandError(
                f"{self.name} has no Functions library form: the server has RL's library, "
                "not the module"
                + (
                    "; use gcra(key, max_burst + 1, count, period, cost=quantity) for the same limiter"
                    if self.name == "CL.THROTTLE"
                    else ""
                )
            )
        else:
            prefix = self.library_prefix
        if self.counted:
            return prefix + (len(key),) + tuple(key) + args
        return prefix + (key,) + args


FIXED = Spec("RL.FIXED", "rl_fixed", _decision)
SLIDING = Spec("RL.SLIDING", "rl_sliding", _decision)
SLIDINGCOUNTER = Spec("RL.SLIDINGCOUNTER", "rl_slidingcounter", _decision)
BUCKET = Spec("RL.BUCKET", "rl_bucket", _decision)
GCRA = Spec("RL.GCRA", "rl_gcra", _decision)
THROTTLE = Spec("CL.THROTTLE", None, _throttle)
ALL = Spec("RL.ALL", "rl_all", _all, counted=True)
ACQUIRE = Spec("RL.ACQUIRE", "rl_acquire", _decision)
RELEASE = Spec("RL.RELEASE", "rl_release", _released)
PENALTY = Spec("RL.PENALTY", "rl_penalty", _decision)
SHARE = Spec("RL.SHARE", "rl_share", _decision)


def _options(
    cost: Optional[int],
    refund: Optional[int],
    debit: Optional[int],
    delay: Optional[Duration] = None,
) -> tuple[object, ...]:
    out: tuple[object, ...] = ()
    if cost is not None:
        out += ("COST", cost)
    if refund is not None:
        out += ("REFUND", refund)
    if debit is not None:
        out += ("DEBIT", debit)
    if delay is not None:
        out += ("DELAY", duration(delay)[0])
    return out


# ---- backend detection ---------------------------------------------------------------


def is_cluster(client: Any) -> bool:
    return hasattr(client, "get_nodes") and any(
        "Cluster" in cls.__name__ for cls in type(client).__mro__
    )


def has_command(info: Any) -> bool:
    """Whether a ``COMMAND INFO rl.gcra`` reply has an entry."""
    if isinstance(info, dict):
        return any(v is not None for v in info.values())
    if isinstance(info, (list, tuple)):
        return any(x is not None for x in info)
    return bool(info)


def not_loaded() -> NotLoadedError:
    return NotLoadedError(NOT_LOADED_HELP)


def detection() -> Generator[tuple[str, ...], Any, Backend]:
    """Backend detection without its I/O: yields each probe to send and takes its reply;
    returns the backend (``NotLoadedError`` when neither is there)."""
    if has_command((yield ("COMMAND INFO", "rl.gcra"))):
        return "module"
    if (yield ("FUNCTION LIST", "LIBRARYNAME", "rl")):
        return "library"
    raise not_loaded()


def raise_typed(err: BaseException) -> NoReturn:
    """Raise a client's exception as RL's typed error (an error reply) or as it is (RL's
    own errors, connection errors, anything else)."""
    typed = translate(err)
    if typed is err:
        raise err
    raise typed from err


def check_backend(backend: Optional[str]) -> Optional[Backend]:
    if backend is None:
        return None
    if backend == "module":
        return "module"
    if backend == "library":
        return "library"
    raise ArgumentError(f"backend must be 'module', 'library' or None (detect), not {backend!r}")


def check_on_error(choice: str) -> OnConnectionError:
    if choice == "raise":
        return "raise"
    if choice == "allow":
        return "allow"
    if choice == "deny":
        return "deny"
    raise ArgumentError(f"on_connection_error must be 'raise', 'allow' or 'deny', not {choice!r}")


# ---- the typed API, once -------------------------------------------------------------

D = TypeVar("D")
A = TypeVar("A")
T = TypeVar("T")
R = TypeVar("R")

Policies = Union[Mapping[Key, Policy], Iterable[tuple[Key, Policy]]]


class Api(Generic[D, A, T, R]):
    """Every RL command as a method. ``D``, ``A``, ``T``, ``R``: what a decision, an
    RL.ALL decision, a CL.THROTTLE reply and RL.RELEASE's answer come back as (the
    value, an awaitable of it, or the pipeline for chaining)."""

    __slots__ = ()

    def _submit(self, spec: Spec, key: Any, args: tuple[object, ...], meta: Any, limit: Any) -> Any:
        raise NotImplementedError

    def _limiter(
        self,
        spec: Spec,
        key: Key,
        head: tuple[object, ...],
        period: Duration,
        limit: int,
        cost: Optional[int],
        refund: Optional[int] = None,
        debit: Optional[int] = None,
        delay: Optional[Duration] = None,
        tokens: Optional[int] = None,
    ) -> D:
        """A one-key limiter: ``spec key head... period [options]``; the reply's window is
        ``period``, or with ``tokens`` (a bucket of ``limit`` refilled by ``tokens`` per
        ``period``) the time it takes to refill from empty."""
        p, ms = duration(period)
        args = head + (p,)
        if cost is not None or refund is not None or debit is not None or delay is not None:
            args += _options(cost, refund, debit, delay)
        if tokens is not None:
            ms = refill_ms(limit, tokens, ms)
        return self._submit(spec, key, args, ms, limit)  # type: ignore[no-any-return]

    def fixed(
        self,
        key: Key,
        limit: int,
        window: Duration,
        *,
        cost: Optional[int] = None,
        refund: Optional[int] = None,
        debit: Optional[int] = None,
    ) -> D:
        """``RL.FIXED key limit window [COST n | REFUND n | DEBIT n]``: a fixed window counter."""
        return self._limiter(FIXED, key, (limit,), window, limit, cost, refund, debit)

    def sliding(
        self,
        key: Key,
        limit: int,
        window: Duration,
        *,
        cost: Optional[int] = None,
        refund: Optional[int] = None,
    ) -> D:
        """``RL.SLIDING key limit window [COST n | REFUND n]``: an exact sliding log."""
        return self._limiter(SLIDING, key, (limit,), window, limit, cost, refund)

    def sliding_counter(
        self,
        key: Key,
        limit: int,
        window: Duration,
        *,
        cost: Optional[int] = None,
        refund: Optional[int] = None,
        debit: Optional[int] = None,
    ) -> D:
        """``RL.SLIDINGCOUNTER key limit window [COST n | REFUND n | DEBIT n]``."""
        return self._limiter(SLIDINGCOUNTER, key, (limit,), window, limit, cost, refund, debit)

    def bucket(
        self,
        key: Key,
        capacity: int,
        tokens: int,
        period: Duration,
        *,
        cost: Optional[int] = None,
        refund: Optional[int] = None,
        debit: Optional[int] = None,
    ) -> D:
        """``RL.BUCKET key capacity tokens period [COST n | REFUND n | DEBIT n]``."""
        return self._limiter(
            BUCKET, key, (capacity, tokens), period, capacity, cost, refund, debit, tokens=tokens
        )

    def gcra(
        self,
        key: Key,
        capacity: int,
        tokens: int,
        period: Duration,
        *,
        cost: Optional[int] = None,
        refund: Optional[int] = None,
        debit: Optional[int] = None,
        delay: Optional[Duration] = None,
    ) -> D:
        """``RL.GCRA key capacity tokens period [COST n | REFUND n | DEBIT n] [DELAY max]``.
        With ``delay``, an allowed decision's ``retry_after`` is the wait before acting."""
        return self._limiter(
            GCRA, key, (capacity, tokens), period, capacity, cost, refund, debit, delay, tokens
        )

    def throttle(
        self,
        key: Key,
        max_burst: int,
        count: int,
        period: Duration,
        quantity: Optional[int] = None,
    ) -> T:
        """``CL.THROTTLE key max_burst count period [quantity]`` (redis-cell's command and
        reply; the module only: on the library, ``UnsupportedCommandError``)."""
        p, ms = duration(period)
        limit = max_burst + 1
        ms = refill_ms(limit, count, ms)
        args: tuple[object, ...] = (max_burst, count, p)
        if quantity is not None:
            args += (quantity,)
        return self._submit(THROTTLE, key, args, ms, limit)  # type: ignore[no-any-return]

    def all(
        self,
        policies: Policies,
        *,
        cost: Optional[int] = None,
        refund: Optional[int] = None,
        debit: Optional[int] = None,
    ) -> A:
        """``RL.ALL numkeys key... policy... [COST n | REFUND n | DEBIT n]``: every key's
        policy at once, all or nothing. ``policies``: ``{key: Fixed(...), ...}`` or
        ``[(key, Gcra(...)), ...]``, in key order."""
        items = list(policies.items() if isinstance(policies, Mapping) else policies)
        keys = tuple(k for k, _ in items)
        words: tuple[object, ...] = ()
        limits: list[int] = []
        windows: list[Optional[int]] = []
        for _, policy in items:
            if not isinstance(policy, Policy):
                raise ArgumentError(f"RL.ALL takes Policy objects (Fixed, Gcra, ...), not {policy!r}")
            words += tuple(policy.args())
            limit, window = policy.quota()
            limits.append(limit)
            windows.append(window)
        if cost is not None or refund is not None or debit is not None:
            words += _options(cost, refund, debit)
        return self._submit(ALL, keys, words, (keys, windows), limits)  # type: ignore[no-any-return]

    def acquire(self, key: Key, limit: int, ttl: Duration, id: Union[str, bytes]) -> D:
        """``RL.ACQUIRE key limit ttl id``: take (or renew) the lease ``id``; at most
        ``limit`` leases live at once, each ending by itself after ``ttl``."""
        t, ms = duration(ttl)
        return self._submit(ACQUIRE, key, (limit, t, id), ms, limit)  # type: ignore[no-any-return]

    def release(self, key: Key, id: Union[str, bytes]) -> R:
        """``RL.RELEASE key id``: True if ``id`` held a live lease, now released."""
        return self._submit(RELEASE, key, (id,), None, None)  # type: ignore[no-any-return]

    def penalty(
        self,
        key: Key,
        strikes: int,
        window: Duration,
        block: Duration,
        max: Duration,
        *,
        cost: Optional[int] = None,
    ) -> D:
        """``RL.PENALTY key strikes window block max [COST n]``: record a strike; the
        strike that reaches ``strikes`` in ``window`` blocks for ``block``, doubling per
        repeat up to ``max``. ``cost=0`` only looks."""
        w, ms = duration(window)
        args: tuple[object, ...] = (strikes, w, duration(block)[0], duration(max)[0])
        if cost is not None:
            args += ("COST", cost)
        return self._submit(PENALTY, key, args, ms, strikes)  # type: ignore[no-any-return]

    def share(
        self,
        key: Key,
        tenant: Union[str, bytes],
        weight: int,
        capacity: int,
        tokens: int,
        period: Duration,
        *,
        cost: Optional[int] = None,
        refund: Optional[int] = None,
        debit: Optional[int] = None,
    ) -> D:
        """``RL.SHARE key tenant weight capacity tokens period [COST n | REFUND n | DEBIT n]``
        (servers whose RL has it; else ``UnsupportedCommandError``)."""
        return self._limiter(
            SHARE, key, (tenant, weight, capacity, tokens), period, capacity, cost, refund, debit,
            tokens=tokens,
        )


class LimiterBase(Api[D, A, T, R]):
    """What the sync and asyncio limiters share: their options and what a failed call
    becomes; each of them is only its I/O (``detect`` and ``_submit``)."""

    __slots__ = ("client", "_backend", "_on_error", "_probe")

    def __init__(
        self,
        client: Any,
        *,
        backend: Optional[Backend] = None,
        on_connection_error: OnConnectionError = "raise",
    ) -> None:
        self.client = client
        self._backend: Optional[Backend] = check_backend(backend)
        self._on_error = check_on_error(on_connection_error)
        self._probe: dict[str, Any] = {"target_nodes": "random"} if is_cluster(client) else {}

    @property
    def backend(self) -> Optional[Backend]:
        """``"module"`` or ``"library"`` once known (forced or detected), else None."""
        return self._backend

    def _failed(self, spec: Spec, meta: Any, limit: Any, err: BaseException) -> Any:
        """A call that raised ``err``: the fail mode's decision for a connection error
        (unless it is ``"raise"``), else the typed error raised."""
        if self._on_error != "raise" and isinstance(err, CONNECTION_ERRORS):
            return fallback(spec.parse, self._on_error == "allow", meta, limit, err)
        raise_typed(err)


# ---- pipelines -----------------------------------------------------------------------


P = TypeVar("P", bound="PipelineBase[Any]")


class PipelineBase(Api[P, P, P, P]):
    """What the sync and asyncio pipelines share: queuing. Once the backend is known
    each call goes straight to the client's pipeline object; before that (the first
    calls of a limiter that has not asked the server yet) calls wait in ``_pending``
    and are given to it, in order, when the pipeline executes."""

    __slots__ = ("limiter", "pipe", "_ops", "_pending", "_send")

    def __init__(self, limiter: Any, pipe: Any) -> None:
        self.limiter = limiter
        #: The client's own pipeline object.
        self.pipe = pipe
        #: Three entries per call, in order: its reply parser (None for a raw command),
        #: meta (what the parser needs besides the reply) and limit (for a made-up
        #: decision). A flat list, so that queuing allocates nothing the garbage
        #: collector must then track.
        self._ops: list[Any] = []
        #: (spec or None, key or args, args or options) not given to ``pipe`` yet.
        self._pending: list[tuple[Optional[Spec], Any, Any]] = []
        #: How to queue on ``pipe`` (see ``_stage``), once the backend is known to be the module.
        self._send: Any = None

    def _submit(self, spec: Spec, key: Any, args: tuple[object, ...], meta: Any, limit: Any) -> P:
        send = self._send
        if send is not None and not spec.counted:
            # The hot path: RL.X key args... as the caller would send it by hand.
            send(spec.name, key, *args)
        else:
            backend = self.limiter._backend
            if backend is None or self._pending:
                self._pending.append((spec, key, args))
            else:
                self.pipe.execute_command(*spec.command(backend, key, args))
                if backend == "module":
                    self._send = _stage(self.pipe)
        self._ops += (spec.parse, meta, limit)
        return self  # type: ignore[return-value]

    def execute_command(self, *args: Any, **options: Any) -> P:
        """Queue any other command; its reply comes back as the client gives it."""
        if self._pending:
            self._pending.append((None, args, options))
        else:
            self.pipe.execute_command(*args, **options)
        self._ops += (None, None, None)
        return self  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self._ops) // 3

    def _flush(self, backend: str) -> None:
        queue = self.pipe.execute_command
        for spec, key, args in self._pending:
            if spec is None:
                queue(*key, **args)
            else:
                queue(*spec.command(backend, key, args))
        self._pending = []

    def _take(self) -> list[Any]:
        ops = self._ops
        self._ops = []
        self._pending = []
        return ops

    def _failed(self, ops: list[Any], err: BaseException) -> list[Any]:
        """A batch that raised ``err``: the fail mode's decisions for a connection error
        (unless it is ``"raise"``), else the typed error raised."""
        on_error = self.limiter._on_error
        if on_error != "raise" and isinstance(err, CONNECTION_ERRORS):
            return fallbacks(ops, on_error == "allow", err)
        raise_typed(err)


def _stage(pipe: Any) -> Any:
    """How to queue a command on the client's pipeline: its ``execute_command``, or for a
    standalone redis-py / valkey-py pipeline not in WATCH mode the
    ``pipeline_execute_command`` that it calls (one call less per RL call)."""
    stage = getattr(pipe, "pipeline_execute_command", None)
    if stage is None or getattr(pipe, "watching", True) or is_cluster(pipe) or "Cluster" in type(pipe).__name__:
        return pipe.execute_command
    return stage


def results(ops: list[Any], replies: list[Any]) -> list[Any]:
    """Each call's typed result (a typed error in its slot for a failed one). Empties
    ``replies``."""
    out: list[Any] = []
    append = out.append
    decision = _decision
    # Each reply is dropped as its result is made (popped from the reversed list), so
    # the objects the garbage collector tracks do not double while this runs: that
    # alone made more collections, and more costly ones, than the raw replies cause.
    replies.reverse()
    pop = replies.pop
    for parse, meta in zip(ops[0::3], ops[1::3]):
        reply = pop()
        if parse is decision:
            # The common case, inlined: this loop is the pipeline's whole overhead.
            try:
                allowed, limit, remaining, retry, reset = reply
            except (TypeError, ValueError):
                append(translate(reply) if isinstance(reply, Exception) else parse(reply, meta))
                continue
            append(Decision(allowed == 1, limit, remaining, retry if retry >= 0 else None, reset, meta, None))
        elif isinstance(reply, Exception):
            append(translate(reply))
        elif parse is None:
            append(reply)
        else:
            append(parse(reply, meta))
    return out


def fallbacks(ops: list[Any], allow: bool, err: BaseException) -> list[Any]:
    """Each call's made-up decision when Redis did not answer (the error for a raw one)."""
    return [
        err if parse is None else fallback(parse, allow, meta, limit, err)
        for parse, meta, limit in zip(ops[0::3], ops[1::3], ops[2::3])
    ]


# ---- leases --------------------------------------------------------------------------

L = TypeVar("L")


class LeaseBase(Generic[L]):
    """What the sync and asyncio leases share: their state and the view of their last
    decision (``allowed``, ``limit``, ``remaining``, ``retry_after``, ``reset_after``,
    ``headers()``)."""

    __slots__ = ("limiter", "key", "limit_arg", "ttl", "id", "decision", "released")

    #: The error's text when a field is read before the lease was acquired.
    _not_acquired = "the lease was not acquired yet"

    def __init__(self, limiter: L, key: Key, limit: int, ttl: Duration, id: Union[str, bytes]) -> None:
        self.limiter = limiter
        self.key = key
        self.limit_arg = limit
        self.ttl = ttl
        #: The lease's name (the RL.ACQUIRE id).
        self.id = id
        #: The last RL.ACQUIRE decision, None before the first.
        self.decision: Optional[Decision] = None
        self.released = False

    def _to_release(self) -> bool:
        """Whether a release is due (once, for a lease that was granted); marks it done."""
        d = self.decision
        if self.released or d is None or not d.allowed or d.error is not None:
            return False
        self.released = True
        return True

    def _d(self) -> Decision:
        if self.decision is None:
            raise RLError(self._not_acquired)
        return self.decision

    @property
    def allowed(self) -> bool:
        return self._d().allowed

    @property
    def limit(self) -> int:
        return self._d().limit

    @property
    def remaining(self) -> int:
        return self._d().remaining

    @property
    def retry_after(self) -> Optional[int]:
        return self._d().retry_after

    @property
    def reset_after(self) -> int:
        return self._d().reset_after

    def headers(self, policy: str = "default") -> dict[str, str]:
        return self._d().headers(policy)
