"""`python -m mcpcli.daemon`: the session daemon (started on demand by the command side)."""

import sys

from mcpcli.daemon.server import main

sys.exit(main())
