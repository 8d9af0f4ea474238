"""`python -m mcpcli.daemon`: the session daemon (started on demand by the command side).

Guarded: importing this module (a check that imports every module, documentation tools)
must not run a daemon in the importing process, on its stderr.
"""

import sys

from mcpcli.daemon.server import main

if __name__ == "__main__":
    sys.exit(main())
