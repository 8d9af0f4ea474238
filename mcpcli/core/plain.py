"""Plain value classes for the core: `__slots__`, an `__init__` written out, and the
`__repr__` and `__eq__` a dataclass would have, without `dataclasses`.

Why not dataclasses: a dataclass compiles its methods with `exec` when its class is made,
about 4 M instructions (1-2 ms) each, and the one-shot fast path imports the core at every
start. The eight value classes of the core's flows cost 12% of a one-shot call's
instructions as dataclasses; as plain classes, nothing.
"""

from __future__ import annotations

__all__ = ["Plain"]


class Plain:
    """Fields are the class's `__slots__`, in order (a subclass lists its own)."""

    __slots__: tuple[str, ...] = ()

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"{type(self).__name__}({shown})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self) or not isinstance(other, Plain):
            return NotImplemented
        return self._values() == other._values()

    # Unhashable, as a dataclass with `eq` is (their fields are mostly dicts in any case).
    __hash__ = None  # type: ignore[assignment]
