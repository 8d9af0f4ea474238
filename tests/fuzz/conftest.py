"""Hypothesis profiles for the fuzz tests, chosen by `MCPCLI_FUZZ_PROFILE`.

* `ci` (the default, what `scripts/test` runs): a fixed seed (`derandomize`) and a
  small budget, so a run is reproducible, quick and writes no `.hypothesis/`.
* `long` (what `scripts/fuzz` runs): a random seed (pass `--hypothesis-seed` to
  replay one) and a large budget; `scripts/fuzz` bounds the time.

The deadline is generous because the machine is shared: it catches a parser that
goes quadratic or hangs on some input, not a slow run.
"""

from __future__ import annotations

import os
from datetime import timedelta

from hypothesis import HealthCheck, settings

_COMMON = {
    "database": None,
    "deadline": timedelta(seconds=2),
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

settings.register_profile("ci", max_examples=150, derandomize=True, print_blob=False, **_COMMON)  # type: ignore[arg-type]
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("MCPCLI_FUZZ_EXAMPLES", "2000")),
    derandomize=False,
    print_blob=True,
    **_COMMON,  # type: ignore[arg-type]
)
settings.load_profile(os.environ.get("MCPCLI_FUZZ_PROFILE", "ci"))
