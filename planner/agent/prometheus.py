"""A small client of Prometheus' HTTP API (``/api/v1/query``, ``/api/v1/query_range``), standard library only.

What it reads, strictly: ``{"status": "success", "data": {"resultType": R, "result": [...]}}`` where a ``vector``
item is ``{"metric": {label: text}, "value": [t, "v"]}`` and a ``matrix`` item is ``{"metric": ..., "values":
[[t, "v"], ...]}``; ``t`` is a Unix time in seconds (Prometheus' own, real time) and ``"v"`` a number written as
text, ``"NaN"``, ``"+Inf"`` and ``"-Inf"`` included. Anything else is a :class:`PrometheusError` whose message says
what and where; so are an unreachable server, a time-out, an HTTP error (with Prometheus' ``error`` text) and a
body that is not JSON. The user never sees a traceback.

:meth:`PrometheusClient.raw` reads the raw samples of a selector between two times with range-vector instant
queries (``selector[Nms]`` evaluated at the end of each chunk), so no sample is skipped or repeated as
``query_range``'s step grid would: Prometheus 2.x includes both ends of a range, so samples on a chunk boundary
are dropped from the later chunk (the window read is ``[start, end]``).

:func:`with_retries` calls a function until it answers, sleeping ``min(max_s, base_s * 2**k)`` seconds after the
``k``-th failure (k = 0, 1, ...), for at most ``attempts`` calls and at most ``max_total_s`` seconds of sleep in all;
only errors marked ``retryable`` (unreachable, time-out, HTTP 5xx) are retried. When every attempt fails it raises
the last :class:`PrometheusError`, its message prefixed with the number of attempts; it never returns a stand-in.

Deadlines. A client made by :meth:`PrometheusClient.bounded` carries a deadline (``time.monotonic()``): each
request's timeout is the smaller of ``timeout_s`` and the time left, the answer is read in pieces with the
deadline checked between them, and once it has passed no request is sent (a :class:`PrometheusError` says the
budget is spent). :func:`with_retries` with the same ``deadline`` waits for no retry that would end past it. So a
Prometheus that accepts connections and never answers costs a caller its budget, not ``attempts`` timeouts.
"""

from __future__ import annotations

import http.client
import json
import math
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from wattplan.planner.console.terminal import plain

T = TypeVar("T")

DEFAULT_TIMEOUT_S = 10.0
RAW_CHUNK_S = 600.0
"""Longest stretch of real time one raw-sample query reads (keeps one answer to a few MB at a 1 s scrape)."""

_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_SPECIAL = {"NaN": math.nan, "+Inf": math.inf, "-Inf": -math.inf, "Inf": math.inf}


class PrometheusError(Exception):
    """Prometheus could not be asked, or answered something this client cannot read; the message says why.

    ``retryable`` is True for failures that may pass on their own (unreachable, time-out, HTTP 5xx) and False for
    those that will not (a rejected query, a malformed answer).
    """

    def __init__(self, message: str, retryable: bool = False):
        super().__init__(plain(message))  # it quotes what the server sent, which reaches the operator's terminal
        self.retryable = retryable


@dataclass(frozen=True, slots=True)
class Sample:
    """One item of an instant vector: its labels (``__name__`` where Prometheus kept it), time and value.

    ``t_unix`` is the evaluation time of the query (Prometheus' instant vectors carry it, not the scrape time).
    """

    labels: dict[str, str]
    t_unix: float
    value: float


@dataclass(frozen=True, slots=True)
class Series:
    """One item of a matrix: its labels and its ``(t_unix, value)`` points in time order."""

    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]


class Queries(Protocol):
    """What the observation code asks of Prometheus; :class:`PrometheusClient` is one, a test fake another."""

    def instant(self, query: str, at_unix: float | None = None) -> tuple[Sample, ...]:
        """The instant vector ``query`` evaluates to at ``at_unix`` (None: now)."""
        ...

    def raw(self, selector: str, start_unix: float, end_unix: float) -> tuple[Series, ...]:
        """Every raw sample of the series ``selector`` matches with ``start_unix <= t <= end_unix``."""
        ...


# ---------------------------------------------------------------------------------------------- parsing


def parse_value(value: Any, where: str) -> float:
    """A sample value as Prometheus writes it (text: a decimal number, ``NaN``, ``+Inf``, ``-Inf``)."""
    if isinstance(value, str):
        if value in _SPECIAL:
            return _SPECIAL[value]
        if _NUMBER.fullmatch(value):
            return float(value)
    raise PrometheusError(f"{where}: sample value {str(value)[:40]!r} is not a number written as text")


def _point(raw: Any, where: str) -> tuple[float, float]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise PrometheusError(f'{where}: a sample must be [time, "value"], not {json.dumps(raw)[:80]}')
    t, v = raw
    if isinstance(t, bool) or not isinstance(t, int | float) or not math.isfinite(t):
        raise PrometheusError(f"{where}: sample time {json.dumps(t)[:40]} is not a number")
    return float(t), parse_value(v, where)


def _labels(item: dict[str, Any], where: str) -> dict[str, str]:
    metric = item.get("metric")
    if not isinstance(metric, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in metric.items()):
        raise PrometheusError(f"{where}.metric must be an object of text labels")
    return dict(metric)


def _result(body: bytes, what: str, expected: str) -> list[Any]:
    """The ``data.result`` list of a successful answer whose ``resultType`` is ``expected``."""
    try:
        doc = json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise PrometheusError(f"{what}: the answer is not JSON ({err}): {body[:120]!r}") from None
    except RecursionError:
        raise PrometheusError(f"{what}: the answer is JSON nested too deeply to read") from None
    if not isinstance(doc, dict):
        raise PrometheusError(f"{what}: the answer is JSON but not an object")
    status = doc.get("status")
    if status != "success":
        detail = doc.get("error") if isinstance(doc.get("error"), str) else "no error text"
        raise PrometheusError(f"{what}: status {status!r}: {detail}")
    data = doc.get("data")
    if not isinstance(data, dict):
        raise PrometheusError(f"{what}: the answer has no data object")
    kind = data.get("resultType")
    if kind != expected:
        raise PrometheusError(f"{what}: result type {kind!r}, expected {expected!r}")
    result = data.get("result")
    if not isinstance(result, list):
        raise PrometheusError(f"{what}: data.result is not a list")
    return result


def parse_vector(body: bytes, what: str = "query") -> tuple[Sample, ...]:
    """The samples of an answer whose result type is ``vector``."""
    out = []
    for i, item in enumerate(_result(body, what, "vector")):
        where = f"{what}: result[{i}]"
        if not isinstance(item, dict):
            raise PrometheusError(f"{where} is not an object")
        t, v = _point(item.get("value"), f"{where}.value")
        out.append(Sample(_labels(item, where), t, v))
    return tuple(out)


def parse_matrix(body: bytes, what: str = "query") -> tuple[Series, ...]:
    """The series of an answer whose result type is ``matrix`` (points sorted by time)."""
    out = []
    for i, item in enumerate(_result(body, what, "matrix")):
        where = f"{what}: result[{i}]"
        if not isinstance(item, dict):
            raise PrometheusError(f"{where} is not an object")
        values = item.get("values")
        if not isinstance(values, list):
            raise PrometheusError(f"{where}.values is not a list")
        points = sorted(_point(p, f"{where}.values[{j}]") for j, p in enumerate(values))
        out.append(Series(_labels(item, where), tuple(points)))
    return tuple(out)


def _duration(seconds: float) -> str:
    """A Prometheus duration in whole milliseconds (at least 1 ms)."""
    return f"{max(1, math.ceil(seconds * 1000))}ms"


def _short(query: str) -> str:
    return query if len(query) <= 100 else query[:97] + "..."


# ---------------------------------------------------------------------------------------------- the client


class PrometheusClient:
    """Queries one Prometheus at ``base_url`` (``http://127.0.0.1:9090``), each call limited to ``timeout_s``."""

    def __init__(self, base_url: str, timeout_s: float = DEFAULT_TIMEOUT_S, deadline: float | None = None):
        parsed = urllib.parse.urlsplit(base_url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise PrometheusError(f"Prometheus URL {base_url!r} is not http(s)://HOST:PORT")
        self.base_url = base_url.rstrip("/")
        self.timeout_s = timeout_s
        self.deadline = deadline
        """``time.monotonic()`` after which no request is sent (None: none); see the module docstring."""

    def bounded(self, deadline: float) -> PrometheusClient:
        """The same client with every request ending by ``deadline`` (``time.monotonic()``)."""
        return PrometheusClient(self.base_url, self.timeout_s, deadline)

    def _timeout(self, what: str) -> float:
        """This request's timeout: ``timeout_s``, or less when the deadline is nearer; an error once it passed."""
        if self.deadline is None:
            return self.timeout_s
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise PrometheusError(f"{what}: not sent, the time allowed for Prometheus this round is spent")
        return min(self.timeout_s, left)

    def _read(self, answer: Any, what: str, timeout: float) -> bytes:
        """The whole body, piece by piece, the deadline checked between pieces (a trickling answer ends too)."""
        parts: list[bytes] = []
        while piece := answer.read1(65536):
            parts.append(piece)
            if self.deadline is not None and time.monotonic() > self.deadline:
                raise PrometheusError(
                    f"{what}: Prometheus at {self.base_url} did not answer within {timeout:.3g} s", retryable=True
                )
        return b"".join(parts)

    def _post(self, path: str, params: Mapping[str, str], what: str) -> bytes:
        url = self.base_url + path
        data = urllib.parse.urlencode(params).encode()
        request = urllib.request.Request(
            url, data=data, headers={"Content-Type": "application/x-www-form-urlencoded"}, method="POST"
        )
        timeout = self._timeout(what)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as answer:
                return self._read(answer, what, timeout)
        except urllib.error.HTTPError as err:
            body = err.read() or b""
            try:
                doc = json.loads(body)
                detail = doc.get("error") if isinstance(doc, dict) else None
            except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
                detail = None
            text = detail if isinstance(detail, str) else body[:200].decode("utf-8", "replace").strip()
            raise PrometheusError(
                f"{what}: Prometheus at {self.base_url} answered HTTP {err.code}: {text or err.reason}",
                retryable=err.code >= 500,
            ) from None
        except TimeoutError:
            raise PrometheusError(
                f"{what}: Prometheus at {self.base_url} did not answer within {timeout:.3g} s", retryable=True
            ) from None
        except urllib.error.URLError as err:
            reason = err.reason
            if isinstance(reason, TimeoutError):
                raise PrometheusError(
                    f"{what}: Prometheus at {self.base_url} did not answer within {timeout:.3g} s",
                    retryable=True,
                ) from None
            raise PrometheusError(f"cannot reach Prometheus at {self.base_url}: {reason}", retryable=True) from None
        except (OSError, ValueError, http.client.HTTPException) as err:  # HTTPException: a malformed answer
            raise PrometheusError(f"cannot reach Prometheus at {self.base_url}: {err}", retryable=True) from None

    def _params(self, query: str) -> dict[str, str]:
        left = self.timeout_s if self.deadline is None else max(0.001, self.deadline - time.monotonic())
        return {"query": query, "timeout": _duration(min(self.timeout_s, left))}  # "3.5s" is not a duration

    def instant(self, query: str, at_unix: float | None = None) -> tuple[Sample, ...]:
        """The instant vector ``query`` evaluates to at ``at_unix`` (Unix s; None: Prometheus' now)."""
        params = self._params(query)
        if at_unix is not None:
            params["time"] = f"{at_unix:.3f}"
        what = f"query {_short(query)!r}"
        return parse_vector(self._post("/api/v1/query", params, what), what)

    def instant_matrix(self, query: str, at_unix: float | None = None) -> tuple[Series, ...]:
        """The range vector a range-selector ``query`` (``metric[5m]``) evaluates to at ``at_unix``: raw samples."""
        params = self._params(query)
        if at_unix is not None:
            params["time"] = f"{at_unix:.3f}"
        what = f"query {_short(query)!r}"
        return parse_matrix(self._post("/api/v1/query", params, what), what)

    def range_query(self, query: str, start: float, end: float, step: float) -> tuple[Series, ...]:
        """``query`` evaluated every ``step`` seconds from ``start`` to ``end`` (Unix s): Prometheus' step grid."""
        if not (step > 0 and end >= start):
            raise PrometheusError(f"range query needs step > 0 and end >= start (got {start}, {end}, {step})")
        params = {**self._params(query), "start": f"{start:.3f}", "end": f"{end:.3f}", "step": f"{step:g}"}
        what = f"range query {_short(query)!r}"
        return parse_matrix(self._post("/api/v1/query_range", params, what), what)

    def raw(
        self, selector: str, start_unix: float, end_unix: float, chunk_s: float = RAW_CHUNK_S
    ) -> tuple[Series, ...]:
        """Every raw sample of ``selector``'s series with ``start_unix <= t <= end_unix``, read in chunks.

        Series are keyed by their full label set; a series' points are sorted and unique in time.
        """
        if end_unix < start_unix:
            return ()
        points: dict[tuple[tuple[str, str], ...], dict[float, float]] = {}
        labels: dict[tuple[tuple[str, str], ...], dict[str, str]] = {}
        a = start_unix
        while True:
            b = min(end_unix, a + chunk_s)
            for series in self.instant_matrix(f"{selector}[{_duration(b - a)}]", b):
                key = tuple(sorted(series.labels.items()))
                labels.setdefault(key, series.labels)
                kept = points.setdefault(key, {})
                for t, v in series.points:
                    if start_unix <= t <= end_unix:
                        kept[t] = v
            if b >= end_unix:
                break
            a = b
        return tuple(Series(labels[k], tuple(sorted(p.items()))) for k, p in points.items() if p)

    def ready(self) -> bool:
        """Whether ``/-/ready`` answers 200 (Prometheus has started and loaded its database)."""
        try:
            with urllib.request.urlopen(self.base_url + "/-/ready", timeout=self.timeout_s) as answer:
                return bool(answer.status == 200)
        except (OSError, ValueError):
            return False


# ---------------------------------------------------------------------------------------------- retries


def backoff_delays(attempts: int, base_s: float, max_s: float, max_total_s: float) -> list[float]:
    """The sleeps between ``attempts`` calls: ``min(max_s, base_s * 2**k)``, cut where their sum passes the cap."""
    delays: list[float] = []
    total = 0.0
    for k in range(max(0, attempts - 1)):
        d = min(max_s, base_s * 2**k)
        if total + d > max_total_s:
            break
        delays.append(d)
        total += d
    return delays


def with_retries(
    fn: Callable[[], T],
    attempts: int = 4,
    base_s: float = 0.5,
    max_s: float = 8.0,
    max_total_s: float = 30.0,
    sleep: Callable[[float], None] = time.sleep,
    deadline: float | None = None,
) -> T:
    """``fn()``'s answer, retrying retryable :class:`PrometheusError` failures with exponential backoff.

    Calls ``fn`` at most ``attempts`` times, sleeping the :func:`backoff_delays` in between (``sleep`` is
    injectable for tests). A non-retryable error is raised at once. When every attempt fails, raises a
    :class:`PrometheusError` ``"N attempts failed; the last: ..."`` (retryable, so a caller may try again next
    round). Any other exception of ``fn`` passes through. With ``deadline`` (``time.monotonic()``) no retry is
    waited for that would start past it: the last error is raised instead.
    """
    if attempts < 1:
        raise ValueError("attempts must be >= 1")
    delays = backoff_delays(attempts, base_s, max_s, max_total_s)
    tries = 0
    while True:
        tries += 1
        try:
            return fn()
        except PrometheusError as err:
            if not err.retryable:
                raise
            late = deadline is not None and tries <= len(delays) and time.monotonic() + delays[tries - 1] >= deadline
            if tries > len(delays) or late:
                raise PrometheusError(f"{tries} attempt(s) failed; the last: {err}", retryable=True) from None
            sleep(delays[tries - 1])
