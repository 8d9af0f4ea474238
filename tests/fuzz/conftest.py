"""Hypothesis profiles for the fuzz tests, chosen by `MCPCLI_FUZZ_PROFILE`.

* `ci` (the default, what `scripts/test` runs): a fixed seed (`derandomize`) and a
  small budget, so a run is reproducible, quick and writes no `.hypothesis/`.
* `quick` (what `scripts/test --fast` runs): the same, with a token budget, so the
  contributor loop still exercises every property.
* `long` (what `scripts/fuzz` runs): a random seed (pass `--hypothesis-seed` to
  replay one) and a large budget; `scripts/fuzz` bounds the time.

Hypothesis keeps caches (Unicode tables, constants) in a storage directory,
`./.hypothesis` by default: it goes to the temp dir instead, so no run writes into
the tree (`HYPOTHESIS_STORAGE_DIRECTORY` still wins).

The deadline is generous because the machine is shared: it catches a parser that
goes quadratic or hangs on some input, not a slow run.
"""

from __future__ import annotations

import os
import tempfile
from datetime import timedelta
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path(tempfile.gettempdir()) / "mcpcli-hypothesis")

_COMMON = {
    "database": None,
    "deadline": timedelta(seconds=2),
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

settings.register_profile("quick", max_examples=15, derandomize=True, print_blob=False, **_COMMON)  # type: ignore[arg-type]
settings.register_profile("ci", max_examples=100, derandomize=True, print_blob=False, **_COMMON)  # type: ignore[arg-type]
settings.register_profile(
    "long",
    max_examples=int(os.environ.get("MCPCLI_FUZZ_EXAMPLES", "2000")),
    derandomize=False,
    print_blob=True,
    **_COMMON,  # type: ignore[arg-type]
)
settings.load_profile(os.environ.get("MCPCLI_FUZZ_PROFILE", "ci"))
