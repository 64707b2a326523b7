import sys

from notewarden.cli import main

sys.exit(main())
