"""What the sync and asyncio limiters share: backend detection, a call and a batch
without their I/O (re-detecting when the server no longer has the command), what a
failed call becomes, pipelines' queuing and leases. The methods themselves are
generated (``_commands``)."""

from __future__ import annotations

from typing import Any, Generator, Generic, Literal, NoReturn, Optional, TypeVar, Union

from ._arguments import Duration, Key
from ._commands import Commands
from ._connect import DEFAULT_TIMEOUT, check_timeout, is_cluster, own_client
from ._errors import (
    CONNECTION_ERRORS,
    NOT_LOADED_HELP,
    ArgumentError,
    NotLoadedError,
    RLError,
    is_unknown_command,
    translate,
)
from ._spec import REPLIES, Spec
from ._survive import Survival, Ticket, ticket as survival_ticket
from ._types import Decision

Backend = Literal["module", "library"]
OnConnectionError = Literal["raise", "allow", "deny"]

#: One round trip of a call without its I/O: the command's words and the keyword
#: arguments to give the client's ``execute_command``.
Step = tuple[tuple[object, ...], dict[str, Any]]
#: A call's or a batch's round trips: each a Step, or a pipeline object to execute.
Steps = Generator[Any, Any, Any]

_NO_OPTIONS: dict[str, Any] = {}

# ---- backend detection ---------------------------------------------------------------


def has_command(info: Any) -> bool:
    """Whether a ``COMMAND INFO rl.gcra`` reply has an entry."""
    if isinstance(info, dict):
        return any(v is not None for v in info.values())
    if isinstance(info, (list, tuple)):
        return any(x is not None for x in info)
    return bool(info)


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


D = TypeVar("D")
A = TypeVar("A")
T = TypeVar("T")
R = TypeVar("R")


class LimiterBase(Commands[D, A, T, R]):
    """What the sync and asyncio limiters share: their options, the steps of a call and
    what a failed call becomes; each of them is only its I/O."""

    __slots__ = ("client", "_conn", "_backend", "_on_error", "_probe", "timeout", "_survival")

    def __init__(
        self,
        client: Any,
        *,
        backend: Optional[Backend] = None,
        on_connection_error: OnConnectionError = "raise",
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        cache_size: int = 0,
        cache_max: float = 1.0,
        fallback_instances: int = 0,
        probe_every: float = 0.5,
    ) -> None:
        #: The client given.
        self.client = client
        #: Each call's deadline in seconds (None: the client's own timeouts and retries).
        self.timeout = check_timeout(timeout)
        #: What RL's calls go through (see ``_connect.own_client``).
        self._conn = own_client(client, self.timeout)
        self._backend: Optional[Backend] = check_backend(backend)
        self._on_error = check_on_error(on_connection_error)
        self._probe: dict[str, Any] = {"target_nodes": "random"} if is_cluster(client) else {}
        #: The blocked-key cache and the fallback limiter; None when neither is on.
        self._survival: Optional[Survival] = None
        if cache_size or fallback_instances:
            self._survival = Survival(cache_size, cache_max, fallback_instances, probe_every)

    @property
    def backend(self) -> Optional[Backend]:
        """``"module"`` or ``"library"`` once known (forced or detected), else None."""
        return self._backend

    def _detection(self) -> Steps:
        """Ask the server which backend it has (``COMMAND INFO rl.gcra``, else ``FUNCTION
        LIST LIBRARYNAME rl``) and keep the answer; ``NotLoadedError`` when it has neither."""
        backend: Backend
        if has_command((yield ("COMMAND INFO", "rl.gcra"), self._probe)):
            backend = "module"
        elif (yield ("FUNCTION LIST", "LIBRARYNAME", "rl"), self._probe):
            backend = "library"
        else:
            self._backend = None
            raise NotLoadedError(NOT_LOADED_HELP)
        self._backend = backend
        return backend

    def _call(self, spec: Spec, key: Any, args: tuple[object, ...]) -> Steps:
        """One call's round trips: the backend's form of the command (detecting first if
        the backend is not known); when the server answers that it has no such command
        or function, detect again and, if the backend changed, send it once more."""
        backend = self._backend or (yield from self._detection())
        command = spec.command(backend, key, args)
        try:
            return (yield command, _NO_OPTIONS)
        except Exception as err:
            if not is_unknown_command(err):
                raise
            now = yield from self._detection()
            if now == backend:
                raise
        return (yield spec.command(now, key, args), _NO_OPTIONS)

    def _survive(self, spec: Spec, key: Any, args: tuple[object, ...], limit: Any, meta: Any) -> Any:
        """With a cache of blocked keys or a fallback limiter: (the call's ticket or None,
        the decision made without the server or None). A shadow call has no ticket: it
        always goes to the server (which counts it), and its rejections block nothing."""
        survival = self._survival
        t = None if survival is None or spec.shadow else survival_ticket(spec.name, key, args)
        if t is None:
            return None, None
        return t, survival.before(t, limit, meta)  # type: ignore[union-attr]

    def _answered(self, t: Optional[Ticket], d: Any) -> Any:
        return d if t is None else self._survival.answered(t, d)  # type: ignore[union-attr]

    def _failed(self, spec: Spec, meta: Any, limit: Any, err: BaseException, t: Optional[Ticket] = None) -> Any:
        """A call that raised ``err``: for a connection error or a time-out, the fallback
        limiter's decision (when configured), else the fail mode's (unless it is
        ``"raise"``); else the typed error raised."""
        if t is not None:
            if not isinstance(err, CONNECTION_ERRORS):
                self._survival.up()  # type: ignore[union-attr]
            elif (d := self._survival.failed(t, limit, meta, err)) is not None:  # type: ignore[union-attr]
                return d
        if self._on_error != "raise" and isinstance(err, CONNECTION_ERRORS):
            return spec.made_up(self._on_error == "allow", meta, limit, err)
        raise_typed(err)


# ---- pipelines -----------------------------------------------------------------------

#: Five entries per queued call, in order: its Spec (None for a raw command), key and
#: arguments (a raw command's words and options), meta (what its reply parser needs
#: besides the reply) and limit (for a made-up decision). A flat list, so that queuing
#: allocates nothing the garbage collector must then track.
STRIDE = 5

P = TypeVar("P", bound="PipelineBase[Any]")


class PipelineBase(Commands[P, P, P, P]):
    """What the sync and asyncio pipelines share: queuing, and a batch's round trips.
    Once the backend is known each call goes straight to the client's pipeline object;
    before that (the first calls of a limiter that has not asked the server yet) calls
    wait and are given to it, in order, when the pipeline executes."""

    __slots__ = ("limiter", "pipe", "_ops", "_waiting", "_form", "_send")

    def __init__(self, limiter: Any, transaction: bool) -> None:
        self.limiter = limiter
        #: The client's own pipeline object.
        self.pipe = limiter._conn.pipeline(transaction=transaction)
        self._ops: list[Any] = []
        #: Calls wait in ``_ops`` (none given to ``pipe`` yet) for the backend.
        self._waiting = False
        #: The backend whose form the calls given to ``pipe`` have.
        self._form: Optional[Backend] = None
        #: How to queue on ``pipe`` in bytes (see ``_stage``), once the form is the module's.
        self._send: Any = None

    def _submit(self, spec: Spec, key: Any, args: tuple[object, ...], meta: Any, limit: Any) -> P:
        send = self._send
        if send is not None and not spec.counted:
            # The hot path: RL.X key args... as the caller would send it by hand, its
            # words already in bytes (a call's shape repeats: encoded once).
            wire = _wire.get(args)
            if wire is None:
                wire = _encode(args)
            send(spec.wire_name, key, *wire)
        else:
            form = self._form or self.limiter._backend
            if form is None or self._waiting:
                self._waiting = True
            else:
                self.pipe.execute_command(*spec.command(form, key, args))
                self._form = form
                if form == "module":
                    self._send = _stage(self.pipe)
        self._ops += (spec, key, args, meta, limit)
        return self  # type: ignore[return-value]

    def execute_command(self, *args: Any, **options: Any) -> P:
        """Queue any other command; its reply comes back as the client gives it."""
        if not self._waiting:
            self.pipe.execute_command(*args, **options)
        self._ops += (None, args, options, None, None)
        return self  # type: ignore[return-value]

    def __len__(self) -> int:
        return len(self._ops) // STRIDE

    def _take(self) -> tuple[list[Any], bool, Optional[Backend]]:
        """The queued calls, whether they wait and their form, leaving the pipeline empty."""
        taken = self._ops, self._waiting, self._form
        self._ops, self._waiting, self._form, self._send = [], False, None, None
        return taken

    def _batch(self, ops: list[Any], waiting: bool, form: Optional[Backend]) -> Steps:
        """A batch's round trips (yielding a command, or a pipeline object to execute):
        detect first if the calls waited for the backend, and send; then, for the calls
        the server answered it has no such command or function for, detect again and,
        if the backend changed, send those once more. Its result is every call's reply
        (an exception object for a failed one)."""
        if waiting:
            form = self.limiter._backend or (yield from self.limiter._detection())
            _queue(self.pipe, ops, form)
        try:
            replies: list[Any] = yield self.pipe
        except Exception as err:
            # A transaction that EXEC refused: nothing ran.
            if form is None or not is_unknown_command(err):
                raise
            now = yield from self.limiter._detection()
            if now == form:
                raise
            _queue(self.pipe, ops, now)
            return (yield self.pipe)
        stale = [
            i
            for i, reply in enumerate(replies)
            if ops[i * STRIDE] is not None and isinstance(reply, Exception) and is_unknown_command(reply)
        ]
        if stale:
            now = yield from self.limiter._detection()
            if now != form:
                again = self.limiter._conn.pipeline(transaction=False)
                _queue(again, [x for i in stale for x in ops[i * STRIDE : (i + 1) * STRIDE]], now)
                for i, reply in zip(stale, (yield again)):
                    replies[i] = reply
        return replies

    def _failed(self, ops: list[Any], err: BaseException) -> list[Any]:
        """A batch that raised ``err``: the fail mode's decisions for a connection error or
        a time-out (unless it is ``"raise"``), else the typed error raised."""
        on_error = self.limiter._on_error
        if on_error != "raise" and isinstance(err, CONNECTION_ERRORS):
            return made_up(ops, on_error == "allow", err)
        raise_typed(err)


# The bytes of the argument tuples queued lately (checked already: exact ints, strs
# and bytes, so equal tuples are the same words).
_wire: dict[tuple[object, ...], tuple[object, ...]] = {}


def _encode(args: tuple[object, ...]) -> tuple[object, ...]:
    """``args`` as the bytes the client would send (ints in decimal, ASCII strings), and
    kept for the next call of the same shape; a non-ASCII string is left for the
    client to encode as it is set to."""
    wire = tuple(
        b"%d" % a if type(a) is int else a.encode() if type(a) is str and a.isascii() else a
        for a in args
    )
    if len(_wire) >= 4096:
        _wire.clear()
    _wire[args] = wire
    return wire


def _queue(pipe: Any, ops: list[Any], backend: str) -> None:
    """Give ``ops`` to the client's pipeline object, each call in ``backend``'s form."""
    queue = pipe.execute_command
    for i in range(0, len(ops), STRIDE):
        spec, key, args = ops[i : i + 3]
        if spec is None:
            queue(*key, **args)
        else:
            queue(*spec.command(backend, key, args))


def _stage(pipe: Any) -> Any:
    """How to queue a command in bytes on the client's pipeline: for a standalone
    redis-py / valkey-py pipeline not in WATCH mode, the ``pipeline_execute_command``
    that its ``execute_command`` calls (one call less per RL call); else None (a cluster
    pipeline routes by the command's name and key: it takes the generic path)."""
    stage = getattr(pipe, "pipeline_execute_command", None)
    if stage is None or getattr(pipe, "watching", True) or is_cluster(pipe) or "Cluster" in type(pipe).__name__:
        return None
    return stage


def results(ops: list[Any], replies: list[Any], raise_on_error: bool) -> list[Any]:
    """Each call's typed result (its typed error in its slot for a failed one, or the
    first error raised with ``raise_on_error``). Empties ``replies``."""
    out: list[Any] = []
    append = out.append
    decision = REPLIES["decision"].parse
    # Each reply is dropped as its result is made (popped from the reversed list), so
    # the objects the garbage collector tracks do not double while this runs: that
    # alone made more collections, and more costly ones, than the raw replies cause.
    replies.reverse()
    pop = replies.pop
    failed = False
    for spec, meta in zip(ops[0::STRIDE], ops[3::STRIDE]):
        reply = pop()
        if spec is None:
            if isinstance(reply, Exception):
                failed = True
                reply = translate(reply)
            append(reply)
            continue
        parse = spec.parse
        if parse is decision:
            # The common case, inlined: this loop is the pipeline's whole overhead.
            try:
                allowed, limit, remaining, retry, reset = reply
            except (TypeError, ValueError):
                pass
            else:
                append(Decision(allowed == 1, limit, remaining, retry if retry >= 0 else None, reset, meta, None))
                continue
        if isinstance(reply, Exception):
            failed = True
            append(translate(reply))
        else:
            append(parse(reply, meta))
    if failed and raise_on_error:
        first = next(r for r in out if isinstance(r, Exception))
        raise first
    return out


def made_up(ops: list[Any], allow: bool, err: BaseException) -> list[Any]:
    """Each call's made-up decision when Redis did not answer (the error for a raw
    command, or for one whose answer cannot be made up)."""
    out: list[Any] = []
    for i in range(0, len(ops), STRIDE):
        spec, _, _, meta, limit = ops[i : i + STRIDE]
        try:
            out.append(err if spec is None else spec.made_up(allow, meta, limit, err))
        except Exception as raised:
            out.append(raised)
    return out


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
