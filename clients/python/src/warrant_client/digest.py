"""The digest an approval binds, computed here as the server computes it: SHA-256 over the
canonical JSON of the arguments (object keys sorted, no spaces, numbers as the server writes
them), written `sha256:<hex>`. An approval sends the digest of the arguments the person was
shown; checking that those arguments hash to it first means a display that altered them (a
proxy, a bug, a careless copy) is caught before anything is approved."""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any


def _float(x: float) -> str:
    """A float as the server's JSON writer has it: the shortest digits that read back as the
    same number (Python's repr finds the same ones), laid out as `1e+16`, `1.5e-7`, `0.0001`,
    `123.0`."""
    if not math.isfinite(x):
        return "null"
    if x == 0.0:
        return "-0.0" if math.copysign(1.0, x) < 0 else "0.0"
    sign = "-" if x < 0 else ""
    text = repr(abs(x))
    mantissa, _, exp = text.partition("e")
    whole, _, frac = mantissa.partition(".")
    digits = (whole + frac).lstrip("0")
    # The decimal exponent of the first digit, after the point: value = 0.DIGITS × 10^point.
    point = len(whole) + (int(exp) if exp else 0)
    if whole == "0":
        point = -(len(frac) - len(frac.lstrip("0")))
    digits = digits.rstrip("0") or "0"
    n = len(digits)
    if 0 <= n <= point <= 16:
        return sign + digits + "0" * (point - n) + ".0"
    if 0 < point <= 16:
        return sign + digits[:point] + "." + digits[point:]
    if -5 < point <= 0:
        return sign + "0." + "0" * (-point) + digits
    e = point - 1
    head = digits[0] + ("." + digits[1:] if n > 1 else "")
    return f"{sign}{head}e{'+' if e > 0 else ''}{e}"


def canonical_json(value: Any) -> str:
    """`value` as compact JSON with object keys sorted, recursively."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        # The server reads an integer that does not fit 64 bits as a double.
        if -(2**63) <= value < 2**64:
            return str(value)
        return _float(float(value))
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: kv[0].encode("utf-8"))
        return "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + canonical_json(v) for k, v in items) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    raise TypeError(f"not a JSON value: {type(value).__name__}")


def digest(value: Any) -> str:
    """`sha256:<hex>` of the canonical form of `value`."""
    return "sha256:" + hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()
