"""The power cap over HTTP: ``wattplan agent --power-cap-port PORT`` (docs/design.md §11.6, demand response).

A grid program or an operator's tool sets the cluster's cap the way such programs signal: an HTTP request. The
endpoint writes the request's value into the agent's cap file (``--power-cap-file``, :mod:`.power_cap`) atomically,
so the file stays the one place the cap lives (it outlives the agent, and an operator may still write it by hand),
and the agent follows it as it follows the file: a change starts a round at the next poll.

``PUT /power-cap`` (or ``POST``) with the file's syntax as the body (``6000``, ``6.5e3``: W; ``none`` or nothing: no
cap) and the header ``Authorization: Bearer TOKEN``, ``TOKEN`` the content of ``--power-cap-token-file``:

- 200 and the cap now set (``6000`` or ``none``, one line) once the file holds it;
- 400 when the body is not a power in W (> 0) or ``none``, naming what it holds; the cap is unchanged;
- 401 without the token or with another one (compared in constant time); the cap is unchanged;
- 413 for a body over :data:`MAX_BODY_BYTES`, 411 without a length.

``GET /power-cap`` answers the cap the file holds (no token needed: it says what the agent's metrics say). Any
other path is 404. The endpoint binds ``--power-cap-address`` (default: this host only); a connection that sends
nothing for :data:`READ_TIMEOUT_S` is closed. The token file must be readable by its owner only (as ``ssh`` asks
of a key): a token others can read is refused when the agent starts.
"""

from __future__ import annotations

import hmac
import os
import stat
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from wattplan.planner.agent.power_cap import NO_CAP, parse_cap
from wattplan.planner.contracts.jsonio import write_text_atomic

PATH = "/power-cap"
"""The endpoint's one path."""
MAX_BODY_BYTES = 256
"""The longest body accepted (a cap is a number or ``none``)."""
READ_TIMEOUT_S = 10.0
"""Seconds a connection may take to send its request before it is closed."""
MIN_TOKEN_CHARS = 16
"""The shortest token accepted (``openssl rand -hex 16`` writes 32 characters)."""
DEFAULT_ADDRESS = "127.0.0.1"
"""Where the endpoint listens unless ``--power-cap-address`` says otherwise: this host only."""


def read_token(path: Path) -> str:
    """The token in ``path`` (surrounding white space dropped); ValueError saying why it cannot be used.

    Refused: a file that cannot be read, one that group or others may read or write (its mode must be 0600 or
    0400), or a token of fewer than :data:`MIN_TOKEN_CHARS` characters or with white space inside.
    """
    try:
        mode = os.stat(path).st_mode
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ValueError(f"cannot read {path}: {getattr(e, 'strerror', None) or e}") from None
    if not stat.S_ISREG(mode):
        raise ValueError(f"{path} is not a regular file")
    if mode & 0o077:
        raise ValueError(f"{path} may be read or written by others (mode {stat.S_IMODE(mode):04o}); chmod 600 it")
    token = text.strip()
    if len(token) < MIN_TOKEN_CHARS or any(c.isspace() for c in token):
        raise ValueError(f"{path} must hold one token of at least {MIN_TOKEN_CHARS} characters, no spaces")
    return token


def cap_text(cap_w: float | None) -> str:
    """The cap as the file and the endpoint write it: ``6000`` (W, shortest exact form) or ``none``."""
    return NO_CAP if cap_w is None else f"{cap_w:.10g}"


class CapEndpoint:
    """The endpoint (module docstring), served from a thread; :meth:`close` stops it.

    ``cap_file``: the agent's ``--power-cap-file``; ``token``: :func:`read_token`'s; ``log``: where each change and
    each refusal is told (the agent's log, from the server's thread).
    """

    def __init__(
        self, cap_file: Path, token: str, log: Callable[[str], None], port: int, address: str = DEFAULT_ADDRESS
    ) -> None:
        self.cap_file, self.log = cap_file, log
        self._token = token.encode("utf-8")
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer((address, port), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="power-cap-endpoint", daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        """The port served (the one given, or the one the system chose for port 0)."""
        return int(self._server.server_address[1])

    def authorised(self, header: str | None) -> bool:
        """Whether ``header`` (``Authorization``'s value) carries the token, compared in constant time."""
        scheme, _, given = (header or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode("utf-8"), self._token)

    def current(self) -> str:
        """The cap the file holds now, as :func:`cap_text` writes it; ValueError when it holds none readable."""
        try:
            return cap_text(parse_cap(self.cap_file.read_text(encoding="utf-8")))
        except FileNotFoundError:
            return NO_CAP
        except (OSError, UnicodeDecodeError) as e:
            raise ValueError(f"cannot read {self.cap_file}: {e}") from None

    def set(self, body: str, who: str) -> str:
        """Write the cap ``body`` holds into the file (atomically); the cap now set. ValueError naming a bad value."""
        text = cap_text(parse_cap(body))
        with self._lock:
            write_text_atomic(self.cap_file, text + "\n")
        self.log(f"power cap set to {text if text == NO_CAP else text + ' W'} over HTTP by {who}")
        return text

    def close(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=READ_TIMEOUT_S)


def _handler(endpoint: CapEndpoint) -> type[BaseHTTPRequestHandler]:
    """The request handler class bound to ``endpoint``."""

    class Handler(BaseHTTPRequestHandler):
        timeout = READ_TIMEOUT_S
        server_version = "wattplan-agent"
        sys_version = ""

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 (the base class's name)
            """Quiet: the endpoint logs what it changes and refuses, not every request."""

        def _answer(self, status: HTTPStatus, text: str, bearer: bool = False) -> None:
            data = (text + "\n").encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "text/plain; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            if bearer:
                self.send_header("WWW-Authenticate", 'Bearer realm="wattplan power cap"')
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self.path != PATH:
                return self._answer(HTTPStatus.NOT_FOUND, f"no such path; the cap is at {PATH}")
            try:
                return self._answer(HTTPStatus.OK, endpoint.current())
            except ValueError as e:
                return self._answer(HTTPStatus.INTERNAL_SERVER_ERROR, str(e))

        def do_PUT(self) -> None:  # noqa: N802 (http.server's name)
            who = self.client_address[0]
            if self.path != PATH:
                return self._answer(HTTPStatus.NOT_FOUND, f"no such path; the cap is at {PATH}")
            if not endpoint.authorised(self.headers.get("Authorization")):
                endpoint.log(f"power cap request from {who} refused: no valid token")
                return self._answer(HTTPStatus.UNAUTHORIZED, "a valid bearer token is needed", bearer=True)
            length = self.headers.get("Content-Length")
            if length is None or not length.isdigit():
                return self._answer(HTTPStatus.LENGTH_REQUIRED, "send the cap with a Content-Length")
            if int(length) > MAX_BODY_BYTES:
                return self._answer(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, f"a cap is at most {MAX_BODY_BYTES} bytes")
            try:
                data = self.rfile.read(int(length))
            except OSError:  # the client went quiet (READ_TIMEOUT_S) or away: nothing to answer
                return None
            if len(data) != int(length):
                return self._answer(
                    HTTPStatus.BAD_REQUEST, "the body ended before its Content-Length; the cap is unchanged"
                )
            try:
                now = endpoint.set(data.decode("utf-8"), who)
            except (UnicodeDecodeError, ValueError) as e:
                return self._answer(HTTPStatus.BAD_REQUEST, f"the cap {e}; the cap is unchanged")
            except OSError as e:
                return self._answer(HTTPStatus.INTERNAL_SERVER_ERROR, f"cannot write {endpoint.cap_file}: {e}")
            return self._answer(HTTPStatus.OK, now)

        do_POST = do_PUT

    return Handler
