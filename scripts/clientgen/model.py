"""commands.json, read once for every client generator.

commands.json is written from RL's command table (`make commands-json`); this module
turns it into the few shapes a client's per-command surface needs: each command's
positional arguments after the key (with the kind and range the server checks), its
options, its RL.ALL policy, its reply and how its window reads for the IETF
`RateLimit-Policy` field. The emitters (one module per language beside this one)
turn those shapes into code; nothing here knows a language.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[2]
COMMANDS_JSON = ROOT / "commands.json"


@dataclass(frozen=True)
class Argument:
    """A positional argument after the key (or an option's value)."""

    name: str
    kind: str  # "integer", "duration" or "text"
    min: Optional[int] = None  # integer: smallest value; duration: smallest ms; text: fewest bytes
    max: Optional[int] = None  # the largest, likewise
    max_setting: Optional[str] = None  # a server setting that may lower `max` (the client checks only `max`)
    optional: bool = False  # may be left out (CL.THROTTLE's quantity), then `default` applies
    default: Optional[int] = None
    choices: tuple[str, ...] = ()  # a text that must be one of these words (RL.QUOTA's unit)

    @property
    def words(self) -> list[str]:
        return split_words(self.name)


@dataclass(frozen=True)
class Option:
    """A keyword option (`COST n`, `DELAY max`, ...)."""

    name: str  # as the server spells it: "COST"
    value: Optional[Argument]  # None for a flag (SHADOW), given without a value
    default: Optional[int] = None
    excludes: tuple[str, ...] = ()
    summary: str = ""  # what it does, in a line (commands.json's), for doc comments

    @property
    def flag(self) -> bool:
        """SHADOW: a word without a value, on (sent) or off (left out)."""
        return self.value is None

    @property
    def words(self) -> list[str]:
        return split_words(self.name.lower())

    @property
    def amount(self) -> bool:
        """COST, REFUND and DEBIT: what a call takes, gives back or takes into debt."""
        return self.name in AMOUNTS


AMOUNTS = ("COST", "REFUND", "DEBIT")


@dataclass(frozen=True)
class Window:
    """How the `w` of a `RateLimit-Policy` field follows from a call's arguments.

    kind "argument": the duration argument `args[0]` is the window (a fixed or sliding
    window, a lease's ttl, a penalty's strike window);
    kind "refill": a bucket of `args[0]` units regaining `args[1]` per `args[2]`: the
    time it takes to refill from empty, ceil(capacity * period / tokens);
    kind "throttle": CL.THROTTLE's max_burst + 1 units regaining count per period;
    kind "none": no window the client can compute (w is left out)."""

    kind: str
    args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Command:
    name: str  # "RL.GCRA"
    summary: str
    function: Optional[str]  # the Functions library's function, or None (module only)
    policy: Optional[str]  # the RL.ALL policy word, or None
    policy_options: tuple[Option, ...]  # the options it takes inside RL.ALL, after its arguments
    policy_flags: tuple[Option, ...]  # the flags RL.ALL takes before its word (SHADOW)
    looked_at: bool  # as an RL.ALL policy it is only looked at (COST 0)
    arguments: tuple[Argument, ...]  # after the key
    options: tuple[Option, ...]  # valued options (COST n, DELAY d, TZ zone, ...)
    flags: tuple[Option, ...]  # value-less options (SHADOW), sent as their word when on
    reply: str  # "decision", "throttle", "released", "all"
    counted_keys: bool  # RL.ALL: numkeys key... instead of one key
    window: Window
    plain_rate: bool = False  # one key, one rate: the blocked-key cache and the fallback limiter cover it

    @property
    def words(self) -> list[str]:
        """The method's name in words: RL.SLIDINGCOUNTER -> ["sliding", "counter"]."""
        base = self.name.split(".", 1)[1].lower()
        return METHOD_WORDS.get(base, [base])

    def synopsis(self, options: bool = True) -> str:
        """Its form, as the docs write it: ``RL.GCRA key capacity tokens period [COST n |
        REFUND n | DEBIT n] [DELAY delay] [SHADOW]`` (without the options: up to ``period``)."""
        words = [self.name, "numkeys key... policy..." if self.counted_keys else "key"]
        words += [f"[{a.name}]" if a.optional else a.name for a in self.arguments]
        if options:
            if self.amounts:
                words.append("[" + " | ".join(f"{o.name} n" for o in self.amounts) + "]")
            words += [f"[{o.name} {o.value.name}]" for o in self.extras if o.value]
            words += [f"[{o.name}]" for o in self.flags]
        return " ".join(words)

    @property
    def policy_synopsis(self) -> str:
        """Its form as an RL.ALL policy: ``[SHADOW] GCRA capacity tokens period [DELAY delay]``."""
        words = [f"[{o.name}]" for o in self.policy_flags] + [self.policy or ""]
        words += [f"[{a.name}]" if a.optional else a.name for a in self.arguments]
        words += [f"[{o.name} {o.value.name}]" for o in self.policy_options if o.value]
        return " ".join(words)

    @property
    def amounts(self) -> tuple[Option, ...]:
        return tuple(o for o in self.options if o.amount)

    @property
    def extras(self) -> tuple[Option, ...]:
        """Options other than the amounts (DELAY, EVERY, TZ, ...)."""
        return tuple(o for o in self.options if not o.amount)


# Command names are one word on the server; a client splits the few that join two.
METHOD_WORDS = {"slidingcounter": ["sliding", "counter"]}


@dataclass
class Model:
    version: str
    library: str
    duration_units: tuple[str, ...]
    max_duration_ms: int
    commands: list[Command] = field(default_factory=list)

    @property
    def single(self) -> list[Command]:
        """Commands on one key (every command but RL.ALL)."""
        return [c for c in self.commands if not c.counted_keys]

    @property
    def policies(self) -> list[Command]:
        """Commands that are also RL.ALL policies, in the table's order."""
        return [c for c in self.commands if c.policy]

    @property
    def plain_rates(self) -> list[Command]:
        """The commands the clients' blocked-key cache and fallback limiter cover."""
        return [c for c in self.commands if c.plain_rate]

    def command(self, name: str) -> Command:
        return next(c for c in self.commands if c.name == name)


def split_words(name: str) -> list[str]:
    return [w for w in re.split(r"[_\-\s]+", name) if w]


def snake(words: list[str]) -> str:
    return "_".join(words)


def camel(words: list[str]) -> str:
    return words[0] + "".join(w.capitalize() for w in words[1:])


def pascal(words: list[str]) -> str:
    return "".join(w.capitalize() for w in words)


# Kinds of value the server reads with rules of its own (a calendar's anchor, time of
# day and time zone): a client sends them as text and leaves the checking to the
# server, whose error names the argument.
SERVER_CHECKED_TEXT = ("anchor", "time", "zone")


def _argument(a: dict) -> Argument:
    kind = a["type"]
    if kind == "word":
        return Argument(a["name"], "text", 1, None, choices=tuple(a["values"]))
    if kind in SERVER_CHECKED_TEXT:
        return Argument(a["name"], "text", 1, None)
    if "max_by_unit" in a:
        # The largest any unit allows; the server checks the call's own unit.
        return Argument(a["name"], kind, a.get("min"), max(a["max_by_unit"].values()), default=a.get("default"))
    if kind == "duration":
        return Argument(a["name"], kind, a.get("min_ms"), a.get("max_ms"))
    if kind == "text":
        return Argument(a["name"], kind, a.get("min_bytes"), a.get("max_bytes"))
    return Argument(
        a["name"], kind, a.get("min"), a.get("max"), a.get("max_setting"), bool(a.get("optional")), a.get("default")
    )


def _option(o: dict) -> Option:
    value = None if o["type"] == "flag" else _argument({**o, "name": o.get("value", o["name"].lower())})
    return Option(o["name"], value, o.get("default"), tuple(o.get("excludes", ())), o.get("summary", ""))


def _window(name: str, args: tuple[Argument, ...]) -> Window:
    names = [a.name for a in args]
    if name == "CL.THROTTLE":
        return Window("throttle", ("max_burst", "count", "period"))
    if {"capacity", "tokens", "period"} <= set(names):
        return Window("refill", ("capacity", "tokens", "period"))
    for wanted in ("window", "ttl"):
        if wanted in names:
            return Window("argument", (wanted,))
    return Window("none")


def load(path: Path = COMMANDS_JSON) -> Model:
    data = json.loads(path.read_text())
    policies = {p["word"]: p for p in data.get("policies", [])}
    model = Model(
        version=data["version"],
        library=data["library"],
        duration_units=tuple(data["durations"]["units"]),
        max_duration_ms=data["durations"]["max_ms"],
    )
    for c in data["commands"]:
        args = tuple(_argument(a) for a in c["arguments"] if a["type"] not in ("key", "policy") and a["name"] != "numkeys")
        word = c.get("policy")
        p = policies.get(word, {}) if word else {}
        options = tuple(_option(o) for o in c.get("options", []))
        model.commands.append(
            Command(
                name=c["name"],
                summary=c["summary"],
                function=c.get("function"),
                policy=word,
                policy_options=tuple(_option(o) for o in p.get("options", [])),
                policy_flags=tuple(_option(o) for o in p.get("before", [])),
                looked_at=bool(p.get("looked_at", False)),
                arguments=args,
                options=tuple(o for o in options if not o.flag),
                flags=tuple(o for o in options if o.flag),
                reply=c["reply"],
                counted_keys=c.get("keys") == "counted",
                window=_window(c["name"], args),
                plain_rate=bool(c.get("plain_rate")),
            )
        )
    return model
