"""The report's values as JSON primitives (lists, dicts with text keys, text, numbers, booleans, None), without
a round trip through JSON text: a 100,000-case run holds its records once, not twice."""

from __future__ import annotations

from typing import Any


def json_primitive(value: Any) -> Any:
    """``json.loads(json.dumps(value, default=str))`` without the text: what the JSON report holds, as lists, dicts
    with text keys, text, numbers, booleans and None. Parts that already are such values are kept, not copied (a
    100,000-case run holds its records once, not twice; nested dicts are shared with the records)."""
    kind = type(value)
    if kind is float and value - value != 0.0:  # NaN, inf, -inf (x - x is 0.0 only for finite x): JSON has none
        return str(value)
    if value is None or kind in (str, int, float, bool):
        return value
    if kind is dict:
        if all(type(k) is str for k in value):
            converted = {k: json_primitive(v) for k, v in value.items()}
            if all(converted[k] is v for k, v in value.items()):
                return value
            return converted
        return {_json_key(k): json_primitive(v) for k, v in value.items()}
    if kind is list:
        converted = [json_primitive(v) for v in value]
        return value if all(c is v for c, v in zip(converted, value)) else converted
    if isinstance(value, (list, tuple)):
        return [json_primitive(v) for v in value]
    if isinstance(value, dict):
        return {_json_key(k): json_primitive(v) for k, v in value.items()}
    if isinstance(value, (set, frozenset)):  # as a YAML !!set is read (loader._plain): a list in a stable order
        try:
            members = sorted(value)
        except TypeError:
            members = sorted(value, key=repr)
        return [json_primitive(v) for v in members]
    import json

    if isinstance(value, float) and value - value != 0.0:  # a float subclass (numpy.float64) that is not finite
        return str(float(value))
    return json.loads(json.dumps(value, default=str))  # int/float/str subclasses, and str() of anything else


def _json_key(key: Any) -> str:
    import json

    if isinstance(key, str):
        return str(key)
    if key is None:
        return "null"
    try:
        return json.loads(json.dumps({key: 0}, default=str)).popitem()[0]
    except TypeError:  # a tuple or other key json.dumps refuses (its default= is not asked for keys)
        return str(key)
