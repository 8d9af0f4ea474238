"""Click parameter types shared by several commands."""

from __future__ import annotations

import math
from typing import Any

import click


class FiniteFloatRange(click.FloatRange):
    """`click.FloatRange` without `nan`, `inf` and `-inf`: Python's float() takes them,
    and a NaN deadline or interval only fails later, as an internal error."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        if isinstance(result, float) and not math.isfinite(result):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return result


def seconds(*, min_open: bool = True) -> FiniteFloatRange:
    """A finite number of seconds above 0 (`min_open=False`: 0 too)."""
    return FiniteFloatRange(min=0, min_open=min_open)
