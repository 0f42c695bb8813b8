"""Values as MLflow takes them: keys with the characters it allows, params and tags within its
length limits (truncated, and said so), metrics as finite floats (the others kept apart)."""

from __future__ import annotations

import json
import math
import numbers
import re
from typing import Any

from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, MAX_PARAM_VAL_LENGTH, MAX_TAG_VAL_LENGTH

_BAD_KEY_CHARS = re.compile(r"[^\w.\- :]")


def mlflow_key(name: Any) -> str:
    """A param/metric/tag key MLflow accepts: disallowed characters (and ``/``, which MLflow
    treats as a path) become ``_``, at most 250 characters."""
    key = _BAD_KEY_CHARS.sub("_", str(name))[:MAX_ENTITY_KEY_LENGTH] or "_"
    return "_" + key[1:] if key in (".", "..") or key.startswith("..") else key


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, default=str, sort_keys=True)
    return str(value)


def _truncate(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    note = f"...[truncated, {len(text)} chars]"
    return text[:limit - len(note)] + note, True


def param_values(params: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """Params as MLflow strings; values longer than MLflow's 6000 characters are truncated.
    Returns the params and the keys that were truncated."""
    out, cut = {}, []
    for k, v in params.items():
        out[mlflow_key(k)], was_cut = _truncate(_text(v), MAX_PARAM_VAL_LENGTH)
        if was_cut:
            cut.append(mlflow_key(k))
    return out, cut


def tag_values(tags: dict[str, Any]) -> dict[str, str]:
    return {mlflow_key(k): _truncate(_text(v), MAX_TAG_VAL_LENGTH)[0] for k, v in tags.items()}


def metric_values(metrics: dict[str, Any]) -> tuple[dict[str, float], dict[str, str]]:
    """Finite real numbers as floats; the others (NaN, inf, None, text) are returned apart, as
    text, for a tag that says they were skipped."""
    ok, skipped = {}, {}
    for k, v in metrics.items():
        if isinstance(v, numbers.Real) and math.isfinite(float(v)):
            ok[mlflow_key(k)] = float(v)
        else:
            skipped[mlflow_key(k)] = _text(v)
    return ok, skipped
