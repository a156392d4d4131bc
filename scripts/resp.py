"""The small RESP2 client that scripts/bench.py, scripts/plot.py and scripts/accuracy.py share.

Standard library only (socket): `make bench` and `make test`'s bench smoke run on a
bare python3 without pip, so redis-py is not an option. One client for all of them,
so a fix to the protocol code lands once.

    r = Client("127.0.0.1", 6379)
    r.call("SET", "k", b"\\x00binary")      # a reply; an error reply raises RedisError
    r.execute("GET", "k")                  # a reply; an error reply is returned, not raised
    r.pipeline([["INCR", "a"], ["INCR", "b"]])   # one write, then every reply in order

Replies: a simple string is a str, an error a RedisError, an integer an int, a bulk
string bytes, a null None, an array a list (nested as the server nests it).
"""

import socket


class RedisError(Exception):
    """An error reply (`-ERR ...`); str() is its text. read() and execute() return it
    as a value, so a caller can look at it and the replies after it still line up;
    call() and pipeline() raise it."""


def encode(args):
    """One command as a RESP array of bulk strings: bytes go as they are (binary-safe),
    anything else (str, int, float) as the UTF-8 of its str()."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, (bytes, bytearray)) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Client:
    """One connection, used by one thread. Replies are read through a 64 KiB buffered
    reader (the C readline of io.BufferedReader), so a pipeline's replies cost one
    recv per buffer, not one per reply, and reading stays linear in the reply size."""

    def __init__(self, host, port, timeout=10.0):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        # Every command goes out in one write; don't let Nagle hold it back.
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb", buffering=65536)

    def close(self):
        self.rfile.close()
        self.sock.close()

    def send(self, commands):
        """Writes these commands (each a list of arguments) in one sendall; read()
        then gets their replies in order."""
        self.sock.sendall(b"".join(encode(c) for c in commands))

    def read(self):
        """The next reply; an error reply is returned as a RedisError, never raised."""
        line = self.rfile.readline()
        if not line.endswith(b"\r\n"):
            raise ConnectionError("the server closed the connection")
        kind, rest = line[:1], line[1:-2]
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.rfile.read(n + 2)
            if len(data) < n + 2:
                raise ConnectionError("the server closed the connection")
            return data[:-2]
        if kind == b":":
            return int(rest)
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RedisError(rest.decode(errors="replace"))
        # Anything else means the stream is out of step: the connection is unusable.
        raise ConnectionError(f"unexpected reply {line!r}")

    def execute(self, *args):
        """One command's reply, an error reply returned as a RedisError value."""
        self.send([args])
        return self.read()

    def pipeline(self, commands):
        """Sends all the commands at once, then reads all their replies; raises the
        first error reply among them (after reading every reply, so the connection
        stays in step). Errors nested in an array (EXEC's) are left to the caller."""
        self.send(commands)
        replies = [self.read() for _ in commands]
        for r in replies:
            if isinstance(r, RedisError):
                raise r
        return replies

    def call(self, *args):
        """One command's reply; an error reply raises RedisError."""
        return self.pipeline([args])[0]

    def time_us(self):
        """The server clock (TIME) in µs."""
        sec, usec = self.call("TIME")
        return int(sec) * 1_000_000 + int(usec)
