"""`python -m notewarden`: the same command line as the `notewarden` script (`cli.main`)."""

import sys

from notewarden.cli import main

sys.exit(main())
